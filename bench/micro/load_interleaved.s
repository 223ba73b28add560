# Load bandwidth from interleaved memory (Jia et al. 2019, "memory
# bandwidth"): six workers each load COUNT times 16 bytes (`ld128pi`) in a
# hardware loop. Bytes a cycle is the slope of the simulator's bytes loaded
# against the bracket (harness.s). Needs `.equ COUNT, N`.
.include "harness.s"
.section .interleaved_buffer, "i"
.align 16
buffer: .zero 16 * 4096
.text
.global main
main:
  on_every_worker load_worker
  halt

.align 8
load_worker:
  setzi $m2, buffer
  setzi $m3, COUNT
  rpt $m3, 1
  { ld128pi $a0:3, $m2, 16 ; fnop }
  exit
