# Exchange bandwidth, to one tile and multicast (Jia et al. 2019, "on-chip
# exchange bandwidth"): tile 0 sends BYTES to tile 1, or with MULTICAST 1 to
# exchange group 0 (tiles 1-3). Tile 0 leaves the counter before and after
# its send (words 0 and 1); each receiver leaves it when its bytes have
# landed (word 2). The rate is the slope between two sizes, so fixed costs
# cancel. Needs `.equ BYTES, N` and `.equ MULTICAST, 0 or 1`.
.include "harness.s"
.exchange_group 1, 2, 3
.data
.align 16
buffer: .zero BYTES
.text
.global main
main:
  gettile $m4
  setzi $m1, buffer
  setzi $m2, BYTES
  cmplti $m6, $m4, 2 + 2 * MULTICAST
  brz $m6, idle
  brnz $m4, receive
  setzi $m3, 1
  setzi $m5, MULTICAST
  brz $m5, timed_send
  setzi $m3, 0
  sethi $m3, 0x8000
timed_send:
  stamp 0, $m7
  send $m1, $m2, $m3
  stamp 1, $m7
idle:
  xdone
  halt
receive:
  recv $m1, $m2, $mzero
  xdone
  stamp 2, $m7
  halt
