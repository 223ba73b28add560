# Tile 0: sends four words to tile 1.
.data
.align 16
payload: .word 1, 2, 3, 4
.text
.global main
main:
  setzi $m1, payload
  setzi $m2, 16
  setzi $m3, 1
  send $m1, $m2, $m3
  xdone
  halt
