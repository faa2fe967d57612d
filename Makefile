# Iron's everyday loops. `make run` is the main job; `make test` runs every test.
BUILD ?= build
JOBS ?= $(shell nproc)
IRON := $(BUILD)/bin/iron

.PHONY: deps configure build run test test-unit corpus gpu-bundle test-inventory clean

deps:
	bash scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja

configure: $(BUILD)/build.ninja

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# Install, build, show the devices, and run the corpus on the best available backend.
run: build
	$(IRON) device
	$(IRON) test

# Every test: unit tests, the corpus on Vulkan, emission + SPIR-V validation + NVRTC sm_90a, DSL compile-fail.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-unit: build
	$(BUILD)/tests/iron_unit_tests

corpus: build
	$(IRON) test --backend vulkan

# Regenerate docs/test-inventory.md from the code (CTest's docs.test_inventory_current checks it).
test-inventory: build
	python3 scripts/test-inventory.py --iron $(IRON)

# Binaries and Vulkan loader packages for the GPU machine (see docs/gpu-machine.md).
gpu-bundle: build
	bash scripts/gpu-bundle.sh $(BUILD)

clean:
	rm -rf $(BUILD)
