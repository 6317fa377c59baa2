/*
 * cxx_test.h - what tests/cxx/seed_blocks.cpp (seed 002's C++ blocks,
 * included verbatim from tests/cxx/seed/) gives test_cxx.cpp to run.
 */
#ifndef GP_TEST_CXX_TEST_H
#define GP_TEST_CXX_TEST_H

#include <string>

namespace cxx_test
{

// The seed's Scoping block (three scopes named "name", one after another).
void seed_scoping();
// The seed's System Monitoring block (phase "phase_name").
void seed_system_monitoring();
// The fields of the seed's InitOptions whose default differs from ours, in
// declaration order ("" when every field matches).
std::string seed_init_options_mismatches();

} // namespace cxx_test

#endif
