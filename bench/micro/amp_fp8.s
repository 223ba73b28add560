# AMP throughput in FP8 (Jia et al. 2019, "arithmetic throughput"): six
# workers each issue COUNT `amp.f8` in a hardware loop, so every cycle issues
# one. MACs a cycle is the slope of the simulator's MAC count against the
# bracket (harness.s) between two counts. Needs `.equ COUNT, N`.
.include "harness.s"
.text
.global main
main:
  on_every_worker amp_worker
  halt

.align 8
amp_worker:
  setzi $m2, COUNT
  rpt $m2, 1
  { nop ; amp.f8 $a0:3, $a4:5, 0, f143, f143 }
  exit
