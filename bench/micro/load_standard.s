# Load bandwidth from standard memory (Jia et al. 2019, "memory bandwidth"):
# six workers each load COUNT times 8 bytes (`ld64pi`, the widest load
# standard memory takes) in a hardware loop. Bytes a cycle is the slope of the
# simulator's bytes loaded against the bracket (harness.s). Needs
# `.equ COUNT, N`.
.include "harness.s"
.section .standard_buffer, "s"
.align 16
buffer: .zero 8 * 4096
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
  { ld64pi $a0:1, $m2, 8 ; fnop }
  exit
