# Tile 1: receives them.
.data
.align 16
inbox: .zero 16
.text
.global main
main:
  setzi $m1, inbox
  setzi $m2, 16
  setzi $m3, 0
  recv $m1, $m2, $m3
  xdone
  halt
