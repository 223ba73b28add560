# The two entry points a newcomer needs; both set up the machine first.
#   make sweep   bootstrap, build, run the reference sweep  -> out/sweep/
#   make test    bootstrap, build, run every test
PRESET ?= release
JOBS ?= $(shell nproc)

.PHONY: bootstrap build sweep test bench clean

bootstrap:
	scripts/bootstrap

build: bootstrap
	cmake --preset $(PRESET) >/dev/null
	cmake --build --preset $(PRESET) -j $(JOBS)

# The reference sweep (../shared/workload.md) on the full simulated chip:
# out/sweep/report.json, report.md and NAME/profile.html per passing case.
# Resumes an interrupted sweep; SWEEP_FLAGS=--force runs every case again.
sweep: build
	build/$(PRESET)/tilec bench --out out/sweep $(SWEEP_FLAGS)

test: build
	ctest --preset $(PRESET)

bench: build
	for b in build/$(PRESET)/bench/*_bench; do $$b; done

clean:
	rm -rf build
