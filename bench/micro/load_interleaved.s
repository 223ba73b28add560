# Load bandwidth from interleaved memory (Jia et al. 2019, "memory
# bandwidth"): bytes a cycle of `ld128pi` on six workers (worker_loop.s).
.section .interleaved_buffer, "i"
.align 16
buffer: .zero 16 * 4096
.macro worker_setup
  setzi $m2, buffer
.endm
.macro timed_bundle
  { ld128pi $a0:3, $m2, 16 ; fnop }
.endm
.include "worker_loop.s"
