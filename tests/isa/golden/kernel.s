# A worker kernel and the supervisor code that starts it: the shape of what
# the compiler's kernel library looks like.
.include "amp_macros.inc"

.equ K_STEPS, 8
.equ ARGS_A, 0
.equ ARGS_B, 4
.equ ARGS_OUT, 8

.text
.global gemm_f8
.type gemm_f8, @kernel
gemm_f8:
    ldw $m2, $m0, ARGS_A            // A pointer
    ldw $m3, $m0, ARGS_B
    ldw $m4, $m0, ARGS_OUT
    muli $m5, $m1, QUAD_BYTES * 2   # this worker's share
    add $m2, $m2, $m5
    { ld64pi $a4:5, $m3, 8 ; accz }
    ld128pi $a0:3, $m2, QUAD_BYTES
    rpti K_STEPS, 2
    amp_step $a0:3, $a4:5, 0
    amp_step $a0:3, $a4:5, 1
    { nop ; accrd.f16 $a8:11, 0, 0, -3 }
    { st128pi $a8:11, $m4, 16 ; accrd.f32 $a12:15, 15, 3, 5 }
    exit
.size gemm_f8, . - gemm_f8

.global main
.type main, @function
main:
    setzi $m6, gemm_f8
    setzi $m7, args
    sethi $m7, 0
    run $m6, $m7
    wsync
    getcount $m8
    brz $m8, .+2
    call $m9, done
done:
    sync
    halt

.data
.align 16
.type args, @object
args:
    .word a_tile, b_tile, out_tile
.size args, 12
.section .tiles, "i"
.align 16
a_tile: .zero 64
b_tile: .zero 16
out_tile: .zero 32
