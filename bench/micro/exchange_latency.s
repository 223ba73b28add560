# Exchange latency against column distance (Jia et al. 2019, "on-chip
# exchange latency"): tile 0 sends one word to tile PEER, which has armed its
# receive long before. Tile 0 leaves the counter one issue before the send
# (word 1) and the issue before that (word 0); PEER leaves the counter at its
# first issue after the word landed (word 2). Needs `.equ PEER, N`.
.include "harness.s"
.data
.align 4
word: .word 1
.text
.global main
main:
  gettile $m4
  setzi $m5, PEER
  cmpeq $m6, $m4, $m5
  brnz $m6, receive
  brnz $m4, idle
  setzi $m1, word
  setzi $m2, 4
  setzi $m3, PEER
  getcount $m7
  getcount $m8
  send $m1, $m2, $m3
  setzi $m14, measured
  stw $m7, $m14, 0
  stw $m8, $m14, 4
idle:
  xdone
  halt
receive:
  setzi $m1, word
  setzi $m2, 4
  recv $m1, $m2, $mzero
  xdone
  stamp 2, $m7
  halt
