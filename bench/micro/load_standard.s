# Load bandwidth from standard memory (Jia et al. 2019, "memory bandwidth"):
# bytes a cycle of `ld64pi`, the widest load standard memory takes, on six
# workers (worker_loop.s).
.section .standard_buffer, "s"
.align 16
buffer: .zero 8 * 4096
.macro worker_setup
  setzi $m2, buffer
.endm
.macro timed_bundle
  { ld64pi $a0:1, $m2, 8 ; fnop }
.endm
.include "worker_loop.s"
