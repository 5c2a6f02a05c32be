// The Catch2 test runner: main() for every test source under tests/.
#define CATCH_CONFIG_MAIN
// Catch2's runner instantiates std::regex; with the sanitizers on, GCC 12
// reports a false -Wmaybe-uninitialized inside libstdc++'s std::function.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <catch2/catch.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
