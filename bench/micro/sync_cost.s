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
  store_bracket
  halt
