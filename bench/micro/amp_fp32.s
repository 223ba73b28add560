# AMP throughput in FP32 (Jia et al. 2019, "arithmetic throughput"): MACs a
# cycle of `amp.f32` on six workers (worker_loop.s).
.macro worker_setup
.endm
.macro timed_bundle
  { nop ; amp.f32 $a0:3, $a4:7, 0 }
.endm
.include "worker_loop.s"
