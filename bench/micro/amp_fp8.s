# AMP throughput in FP8 (Jia et al. 2019, "arithmetic throughput"): MACs a
# cycle of `amp.f8` on six workers (worker_loop.s).
.macro worker_setup
.endm
.macro timed_bundle
  { nop ; amp.f8 $a0:3, $a4:5, 0, f143, f143 }
.endm
.include "worker_loop.s"
