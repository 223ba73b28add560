# Every tile runs this: tile 0 multicasts four words to group 0 (tiles 1-3).
.exchange_group 1, 2, 3
.data
.align 16
buf: .word 7, 8, 9, 10
.text
.global main
main:
  gettile $m4
  setzi $m1, buf
  setzi $m2, 16
  brnz $m4, receive
  setzi $m3, 0
  sethi $m3, 0x8000
  send $m1, $m2, $m3
  xdone
  halt
receive:
  setzi $m3, 0
  recv $m1, $m2, $m3
  xdone
  halt
