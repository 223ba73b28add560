# The two entry points a newcomer needs; both set up the machine first.
#   make sweep   bootstrap, build, run the reference sweep  -> out/sweep/
#   make test    bootstrap, build, run every test
#   make fuzz    build the fuzz targets (ASan, UBSan, coverage feedback) and run
#                each FUZZ_SECONDS (default 600) -> build/fuzz/corpus, build/fuzz/crashes
PRESET ?= release
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 600
FUZZ_TARGETS = graph_reader package_loader assembler onnx_importer

.PHONY: bootstrap build sweep test bench fuzz clean

bootstrap:
	scripts/bootstrap

build: bootstrap
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET) -j $(JOBS)

# The reference sweep (../shared/workload.md) on the full simulated chip:
# out/sweep/report.json, report.md and NAME/profile.html per simulated case.
# Resumes an interrupted sweep; SWEEP_FLAGS=--force runs every case again.
sweep: build
	build/$(PRESET)/tilec bench --out out/sweep $(SWEEP_FLAGS)

test: build
	ctest --preset $(PRESET)

bench: build
	for b in build/$(PRESET)/bench/*_bench; do $$b; done

# Each target starts from its seeds and the corpus earlier runs left
# (build/fuzz/corpus/NAME, which grows with every input that reaches new
# edges); the input of a crash goes to build/fuzz/crashes/NAME.bin and stops
# the run.
fuzz: bootstrap
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	mkdir -p build/fuzz/crashes
	for t in $(FUZZ_TARGETS); do \
	  build/fuzz/fuzz/$${t}_fuzz --seconds $(FUZZ_SECONDS) --corpus build/fuzz/corpus/$$t \
	    --crash build/fuzz/crashes/$$t.bin || exit 1; \
	  echo "fuzz $$t: corpus of $$(ls build/fuzz/corpus/$$t | wc -l) inputs"; \
	done

clean:
	rm -rf build
