// Huge pages for the server's heap.
//
// `aup run` keeps the whole state in memory and adds to it for as long as
// it serves: TPC-C at 64 terminals makes about 35 MB of new heap a second
// (new orders, order lines, the nodes checkpoints copy), which with 4 KiB
// pages is some 8,500 page faults a second, each a trip into the kernel
// (on a paravirtualised guest, into the hypervisor too), and every seek
// into a large table is a TLB miss per level. glibc's allocator can back
// its heap with transparent huge pages (2 MiB: `madvise(MADV_HUGEPAGE)` on
// what it maps, the tunable glibc.malloc.hugetlb=1), but it reads its
// tunables only when a program starts. So `aup run`, before it reads or
// opens anything, starts itself again (execv of its own executable: the
// same process, pid, name, arguments and open files) with the tunable added to
// GLIBC_TUNABLES. Measured on TPC-C W=1 in RAM, 64 terminals: 72 page
// faults in 4 s instead of about 35,000, and less server CPU a transaction
// (the figures: docs/benchmarks.md).
//
// A GLIBC_TUNABLES that names glibc.malloc.hugetlb already is the
// operator's choice and is left alone (`glibc.malloc.hugetlb=0` turns this
// off: docs/operations.md). Where the kernel's transparent huge pages are
// `never`, or the C library is not glibc, the tunable does nothing. If the
// restart cannot be made (no /proc, the executable replaced or deleted
// since it started), aup runs on as it is.
#pragma once

#include <optional>
#include <string>

namespace aup::cli {

// The tunable, as GLIBC_TUNABLES spells it.
inline constexpr const char* kHugePagesTunable = "glibc.malloc.hugetlb=1";

// What GLIBC_TUNABLES should become, given what it is (`current`, null
// when unset): `current` with the tunable added, or nothing (leave it as
// it is) when `current` names glibc.malloc.hugetlb already.
std::optional<std::string> with_huge_pages(const char* current);

// Restarts this process with the tunable when it lacks it (`argv` as main
// had it); returns only when no restart was needed or it failed.
void prefer_huge_pages(char** argv);

}  // namespace aup::cli
