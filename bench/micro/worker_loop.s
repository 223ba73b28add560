# Shared by the throughput benchmarks: six workers each run `worker_setup`,
# then issue the one bundle `timed_bundle` COUNT times in a hardware loop, so
# every cycle issues one. The including file defines both macros; the figure
# is the slope of a simulator statistic against the bracket between two
# counts. Needs `.equ COUNT, N`.
.include "harness.s"
.text
.global main
main:
  on_every_worker timed_worker
  halt

.align 8
timed_worker:
  worker_setup
  setzi $m3, COUNT
  rpt $m3, 1
  timed_bundle
  exit
