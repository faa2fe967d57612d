// The witness of a corpus run (`iron test --witness FILE`, seeds §5.4): every result with the
// hash of the kernel IR that produced it, the device, and one digest over all of it, so two
// runs can be shown to be the same run, or `iron diff` names the cases that differ. Also the
// count and digest of a case set (kernel/case/dtype and tolerance bits), which
// docs/test-inventory.md pins for the registered corpus (`iron list --case-set`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace iron::cli::witness {

// One case of a set: "kernel/case/dtype" and the IEEE bits of its tolerance.
struct Case {
  std::string key;
  double tolerance = 0;
};

// 128-bit XXH3 of the sorted lines "kernel/case/dtype tolerance-bits", as 32 hex digits.
std::string case_set_digest(std::vector<Case> cases);

// Builds the witness document from the run's `device` and `test` messages.
nlohmann::json make_witness(const nlohmann::json& device, const std::vector<nlohmann::json>& tests,
                            const std::vector<std::string>& runner_args);

bool is_witness(const nlohmann::json& j);
// `iron diff A B` on two witnesses: prints what differs; returns 0 when the digests match, 1
// when they differ, 2 when a file is not a witness or its digest does not match its contents.
int diff_witnesses(const nlohmann::json& a, const nlohmann::json& b, const std::string& name_a, const std::string& name_b);

}  // namespace iron::cli::witness
