// doctest's main for the retention tests, in its own translation unit (it
// is slow to compile). tests/doctest_main.cpp is the shared suite's; this
// one keeps bench/retention buildable without it.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
