// iron-runner: links the kernel library (so its registries are populated) and streams protocol
// messages to the `iron` CLI. People use `iron`; this binary is its worker.
#include "harness/runner.hpp"

int main(int argc, char** argv) { return iron::runner_main(argc, argv); }
