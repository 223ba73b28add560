# Worker start and stop (Jia et al. 2019, "thread scheduling"): the
# supervisor starts COUNT workers one after another, each of which exits at
# once, and waits for each before the next (`run`, `wsync`). The cost of one
# start and stop is the slope of the bracket (words 0-2) against COUNT.
# Needs `.equ COUNT, N`.
.include "harness.s"
.text
.global main
main:
  xdone
  setzi $m1, empty_worker
  setzi $m2, COUNT
  getcount $m4
  getcount $m5
  rpt $m2, 2
  { run $m1, $mzero ; fnop }
  { wsync ; fnop }
  getcount $m6
  store_bracket
  halt

.align 8
empty_worker:
  exit
