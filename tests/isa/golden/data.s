# Data directives and constant expressions.
.equ BASE, 0x100
.equ MASK, ~(BASE - 1) & 0xffff

.data
bytes:  .byte 0, 1, -1, 255, 0x7f
        .align 2
halves: .half 0x1234, -1, MASK
        .align 4
words:  .word BASE << 4, BASE >> 2, -BASE, 0b1010 * 3 % 7, bytes + 4
floats: .float 0.5, -1.25e3, 3.4028235e38, 1e-45, -0, inf, -inf
        .zero 5
.section .consts, "s"
.word 7
