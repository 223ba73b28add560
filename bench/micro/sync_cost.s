# Sync cost (Jia et al. 2019, "synchronization"): every tile reads the counter
# twice, one issue apart, then syncs and reads it again. The sync's cost is
# (word 2 - word 1) - (word 1 - word 0): the bracket less one issue.
.include "harness.s"
.text
.global main
main:
  getcount $m4
  getcount $m5
  sync
  getcount $m6
  setzi $m14, measured
  stw $m4, $m14, 0
  stw $m5, $m14, 4
  stw $m6, $m14, 8
  halt
