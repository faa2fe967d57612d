// iron-runner: links the kernel library (so its registries are populated) and streams protocol
// messages to the `iron` CLI. People use `iron`; this binary is its worker.
#include <string_view>

#include "fuzz/conformance.hpp"
#include "fuzz/fuzz.hpp"
#include "harness/runner.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "fuzz") return iron::fuzz::fuzz_main(argc, argv);
  if (argc > 1 && std::string_view(argv[1]) == "conformance") return iron::fuzz::conformance_main(argc, argv);
  return iron::runner_main(argc, argv);
}
