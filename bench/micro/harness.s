# Shared by the microbenchmarks: where they leave their cycle counts, and the
# supervisor's bracket around the workers they start.
#
# `tilec bench --micro` assembles each benchmark with `.equ` lines for its
# parameters first, runs it on the simulator and reads the words at
# `measured` (bench/micro.h says which benchmark leaves which).

.data
.align 16
.global measured
measured: .zero 32

# stamp N, $mR: the cycle counter into measured word N (uses $mR and $m14).
.macro stamp N, REG
  getcount \REG
  setzi $m14, measured
  stw \REG, $m14, 4 * \N
.endm

# store_bracket: $m4, $m5 and $m6 (the counter read twice, one issue apart,
# then after the timed part) into measured words 0-2.
.macro store_bracket
  setzi $m14, measured
  stw $m4, $m14, 0
  stw $m5, $m14, 4
  stw $m6, $m14, 8
.endm

# on_every_worker KERNEL: ends the exchange phase (workers run only in a
# compute phase), starts KERNEL on the six workers and waits for them,
# with the counter read before (word 0 and 1, one issue apart) and after
# (word 2). Words 1 - 0 is what one supervisor issue costs, to subtract.
.macro on_every_worker KERNEL
  xdone
  setzi $m1, \KERNEL
  getcount $m4
  getcount $m5
  run $m1, $mzero
  run $m1, $mzero
  run $m1, $mzero
  run $m1, $mzero
  run $m1, $mzero
  run $m1, $mzero
  wsync
  getcount $m6
  store_bracket
.endm
