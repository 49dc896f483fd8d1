#!/bin/sh
# Installs the Debian 12 packages aup needs to build and test, only those
# that are missing (so a second run does not touch the network).
set -eu
# libsimdjson-dev is only for bench/json, which the build skips without it;
# libsqlite3-dev and gnuplot-nox are for the TPC-C comparison (bench/tpcc)
# and its plots; clang-19 and libclang-rt-19-dev (libFuzzer, the sanitizer
# runtimes) and llvm-19 (llvm-symbolizer, for readable reports) are for the
# fuzz build (tools/fuzz.sh); llvm-19-dev is for `--engine jit` (vm/jit/);
# libedit-dev is `aup shell`'s line editing and history (cli/shell.cpp);
# libhttp-parser-dev parses HTTP (runtime/http.h), curl drives it in tests;
# libcurl4-openssl-dev is the etcd client's HTTP (runtime/etcd.h), and
# etcd-server and etcd-client (etcd, etcdctl) are the etcd its test starts;
# python3-prometheus-client is Prometheus's own text parser, which
# tests/runtime/stats_test.py reads GET /metrics with (so the exposition is
# checked as a scraper reads it, histograms included, not by a regex of ours);
# liburing-dev is bench/peers' io_uring floor (bench/peers/floor_uring.cpp).
packages="g++ meson ninja-build pkg-config re2c libfmt-dev libcli11-dev doctest-dev libxxhash-dev
  python3 hyperfine libsimdjson-dev libsqlite3-dev gnuplot-nox clang-19 libclang-rt-19-dev llvm-19 llvm-19-dev
  libedit-dev libhttp-parser-dev curl libcurl4-openssl-dev etcd-server etcd-client python3-prometheus-client
  liburing-dev"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
as_root=""
[ "$(id -u)" -eq 0 ] || as_root="sudo"
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
# shellcheck disable=SC2086
$as_root apt-get install -y -qq --no-install-recommends $missing
