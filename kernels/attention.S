# Self-attention over whole rows, in the panel format:
#   out[r] = softmax(scale x q[r] k[t]^T over the keys t of r's item) v
# computed in FP32 as src/graph/reference.cpp computes it (see below for
# the one difference).
#
# One kernel per input and output type (FP16 or FP32):
#   attention_f32_f32  attention_f16_f32  attention_f32_f16  attention_f16_f16
#
# Operands, all in the panel format with the same panel count P (row r is
# lane r % 16 of panel r / 16; column c of panel p starts at element
# (c P + p) 16): q [D columns], k [D columns], v [E columns] of the input
# type, out [E columns] of the output type. Rows come in batch items of S
# consecutive rows; query row r attends to the keys t of its item,
# [r - r mod S, r - r mod S + S).
#
# Argument block ($m0), one per worker (workers take contiguous rows):
#   +0  first query row    +4  query rows (0: exit at once)
#   +8  S    +12 D    +16 E    +20 P
#   +24 q    +28 k    +32 v    +36 out    (column 0, panel 0)
#   +40 scale (FP32)
#   +44 scratch: the worker's own 16 (ceil(S/16) + 2) FP32, 16-byte
#       aligned in interleaved memory
#
# Per query row r, with the item's keys in the key panels kp0 .. kp0 + n - 1
# (n = panels, the first holding `lead` keys before the item):
#  1. scores: for each key panel, the AMP sums q[r][d] k[t][d] over d into
#     one accumulator row (fused multiply-adds from +0 in d order, exactly
#     the host's GEMM), read as 16 FP32, times scale, into the scratch;
#  2. the lanes of keys outside the item are set to -inf;
#  3. softmax in place: the largest score, exp(score - largest), their sum
#     in key order (one key at a time), then each exponential divided by
#     the sum, correctly rounded (a reciprocal, then Markstein's correction
#     with fused multiply-adds): the host's probabilities, bit for bit;
#  4. for each column e: sum over the key panels of p x v[.][e] in four
#     FP32 lanes (lane j: keys 4i + j in order, fused multiply-adds), then
#     (lane 0 + lane 1) + (lane 2 + lane 3), rounded once to the output
#     type. The host sums p[t] v[t][e] over t in one sequence: this order
#     differs, so results agree to within the rounding of the two orders.
# Keys of other items in the item's panels get p = 0 and add nothing, as
# long as their v values are finite (rows R .. 16P - 1 of v included).
#
# Registers across rows: $m0 arguments  $m1 end row  $m2 row r
#   $m3 first key of r's item  $a30 -inf  $a31 scale

# $m9 = the item's key panels, $m10 = keys before the item in the first.
.macro ATTN_PANELS
    ldw $m9, $m0, 8
    andi $m10, $m3, 15
    add $m9, $m9, $m10
    addi $m9, $m9, -1
    shri $m9, $m9, 4
    addi $m9, $m9, 1
.endm

# $m3 = first row - (first row mod S): the quotient by FP32 arithmetic
# (first row and S are below 2^22, so first / S rounded to the nearest
# integer is the quotient or one more), then corrected.
.macro ATTN_ITEM_START
    ldw $m5, $m0, 8
    setzi $m13, 0
    sethi $m13, 0x4b00               # 2^23 as FP32 bits
    or $m6, $m13, $m5                # 2^23 + S
    or $m7, $m13, $m2                # 2^23 + first row
    movma $a0, $m6
    movma $a4, $m7
    movma $a8, $m13
    f32v4sub $a0:3, $a0:3, $a8:11    # lane 0: S
    f32v4sub $a4:7, $a4:7, $a8:11    # lane 0: first row
    f32v4recip $a0:3, $a0:3
    f32v4mul $a4:7, $a4:7, $a0:3
    f32v4add $a4:7, $a4:7, $a8:11    # 2^23 + the nearest integer
    movam $m6, $a4
    sub $m6, $m6, $m13
    mul $m6, $m6, $m5
    sub $m6, $m2, $m6                # first row mod S, or that - S
    cmplt $m7, $m6, $mzero
    sub $m7, $mzero, $m7
    and $m7, $m7, $m5
    add $m6, $m6, $m7
    sub $m3, $m2, $m6
.endm

# Scores. Registers: $m4 q (the 8 bytes holding q[r][d], plus the column
# offset)  $m5..$m8 k (column 0 of the key panel, 16 bytes apart)  $m9
# panels left  $m10 column offset  $m11 column stride  $m12 D - 1  $m13
# the read block of r's accumulator row  $m14 scratch.
# FP16: one ld64 holds q of rows 4i..4i+3, the AMP's rows 0-3 (r's row is
# r mod 4); two ld128 hold the panel's 16 keys (columns 0-7, 8-15).
.macro ATTN_SCORES_SETUP_F16 name
    ldw $m11, $m0, 20
    shli $m11, $m11, 5               # column stride: P x 16 x 2
    ldw $m12, $m0, 12
    addi $m12, $m12, -1
    ldw $m4, $m0, 24
    shri $m5, $m2, 2
    shli $m5, $m5, 3
    add $m4, $m4, $m5
    andi $m13, $m2, 3
    shli $m13, $m13, 5               # read blocks of 4 bundles
    setzi $m5, \name\()_read
    add $m13, $m13, $m5
    ldw $m5, $m0, 28
    shri $m6, $m3, 4
    shli $m6, $m6, 5
    add $m5, $m5, $m6
    addi $m6, $m5, 16
.endm

.macro ATTN_SCORES_PANEL_F16
    { ld128r $a0:3, $m5, $mzero ; accz }
    ld128r $a4:7, $m6, $mzero
    ld64r $a8:9, $m4, $mzero
    rpt $m12, 4
    { ld128r $a0:3, $m5, $m10 ; amp.f16 $a8:11, $a0:3, 0 }
    { ld128r $a4:7, $m6, $m10 ; amp.f16 $a8:11, $a4:7, 1 }
    ld64r $a8:9, $m4, $m10
    add $m10, $m10, $m11
    amp.f16 $a8:11, $a0:3, 0
    { jr $m13 ; amp.f16 $a8:11, $a4:7, 1 }
.endm

# FP32: one ld64 holds q of rows 2i, 2i+1 (r's row is r mod 2); four ld128
# hold the panel's keys.
.macro ATTN_SCORES_SETUP_F32 name
    ldw $m11, $m0, 20
    shli $m11, $m11, 6               # column stride: P x 16 x 4
    ldw $m12, $m0, 12
    addi $m12, $m12, -1
    ldw $m4, $m0, 24
    shri $m5, $m2, 1
    shli $m5, $m5, 3
    add $m4, $m4, $m5
    andi $m13, $m2, 1
    shli $m13, $m13, 5
    setzi $m5, \name\()_read
    add $m13, $m13, $m5
    ldw $m5, $m0, 28
    shri $m6, $m3, 4
    shli $m6, $m6, 6
    add $m5, $m5, $m6
    addi $m6, $m5, 16
    addi $m7, $m5, 32
    addi $m8, $m5, 48
.endm

.macro ATTN_SCORES_PANEL_F32
    { ld128r $a0:3, $m5, $mzero ; accz }
    ld128r $a4:7, $m6, $mzero
    ld128r $a8:11, $m7, $mzero
    ld128r $a12:15, $m8, $mzero
    ld64r $a16:17, $m4, $mzero
    rpt $m12, 6
    { ld128r $a0:3, $m5, $m10 ; amp.f32 $a16:19, $a0:3, 0 }
    { ld128r $a4:7, $m6, $m10 ; amp.f32 $a16:19, $a4:7, 1 }
    { ld128r $a8:11, $m7, $m10 ; amp.f32 $a16:19, $a8:11, 2 }
    { ld128r $a12:15, $m8, $m10 ; amp.f32 $a16:19, $a12:15, 3 }
    ld64r $a16:17, $m4, $m10
    add $m10, $m10, $m11
    amp.f32 $a16:19, $a0:3, 0
    amp.f32 $a16:19, $a4:7, 1
    amp.f32 $a16:19, $a8:11, 2
    { jr $m13 ; amp.f32 $a16:19, $a12:15, 3 }
.endm

# Read block: accumulator row `row` (r's scores for the panel's 16 keys)
# into $a0:15, stepping to the next key panel. 4 bundles each.
.macro ATTN_READ_F16 name, row
    { addi $m9, $m9, -1 ; accrd.f32 $a0:3, \row, 0, 0 }
    { addi $m5, $m5, 32 ; accrd.f32 $a4:7, \row, 1, 0 }
    { addi $m6, $m6, 32 ; accrd.f32 $a8:11, \row, 2, 0 }
    { br \name\()_scaled ; accrd.f32 $a12:15, \row, 3, 0 }
.endm

.macro ATTN_READ_F32 name, row
    { addi $m9, $m9, -1 ; accrd.f32 $a0:3, \row, 0, 0 }
    { addi $m5, $m5, 64 ; accrd.f32 $a4:7, \row, 1, 0 }
    { addi $m6, $m6, 64 ; accrd.f32 $a8:11, \row, 2, 0 }
    { br \name\()_scaled ; accrd.f32 $a12:15, \row, 3, 0 }
.endm

.macro ATTN_READ_BLOCKS_F16 name
    ATTN_READ_F16 \name, 0
    ATTN_READ_F16 \name, 1
    ATTN_READ_F16 \name, 2
    ATTN_READ_F16 \name, 3
.endm

.macro ATTN_READ_BLOCKS_F32 name
    ATTN_READ_F32 \name, 0
    ATTN_READ_F32 \name, 1
.endm

# The scores times scale, stored; the next panel's column offset.
.macro ATTN_STORE_SCORES_F16
    { add $m10, $m11, $mzero ; f32v4muls $a0:3, $a0:3, $a31 }
.endm

.macro ATTN_STORE_SCORES_F32
    { add $m10, $m11, $mzero ; f32v4muls $a0:3, $a0:3, $a31 }
    addi $m7, $m7, 64
    addi $m8, $m8, 64
.endm

.macro ATTN_SCORES name, in
    ATTN_SCORES_SETUP_\in \name
    ATTN_PANELS
    ldw $m14, $m0, 44
    add $m10, $m11, $mzero
\name\()_panel:
    ATTN_SCORES_PANEL_\in
\name\()_scaled:
    ATTN_STORE_SCORES_\in
    { st128pi $a0:3, $m14, 16 ; f32v4muls $a4:7, $a4:7, $a31 }
    { st128pi $a4:7, $m14, 16 ; f32v4muls $a8:11, $a8:11, $a31 }
    { st128pi $a8:11, $m14, 16 ; f32v4muls $a12:15, $a12:15, $a31 }
    st128pi $a12:15, $m14, 16
    brnz $m9, \name\()_panel
.endm

# Softmax of the scratch in place. $m9 panels, $m10 lead, $m5 S.
.macro ATTN_SOFTMAX
    ATTN_PANELS
    ldw $m5, $m0, 8
    ldw $m14, $m0, 44
    rpt $m10, 1
    st32pi $a30, $m14, 4             # keys before the item
    shli $m11, $m5, 2
    add $m14, $m14, $m11
    shli $m11, $m9, 4
    sub $m11, $m11, $m10
    sub $m11, $m11, $m5
    rpt $m11, 1
    st32pi $a30, $m14, 4             # keys after the item
    # The largest score, in every lane of $a8:11.
    ldw $m14, $m0, 44
    shli $m12, $m9, 2
    addi $m12, $m12, -1              # quads - 1
    { ld128pi $a0:3, $m14, 16 ; f32v4splat $a4:7, $a30 }
    rpt $m12, 1
    { ld128pi $a0:3, $m14, 16 ; f32v4max $a4:7, $a4:7, $a0:3 }
    { ldw $m14, $m0, 44 ; f32v4max $a4:7, $a4:7, $a0:3 }
    { add $m11, $m14, $mzero ; f32v4hmax $a8, $a4:7 }
    { ld128pi $a0:3, $m14, 16 ; f32v4splat $a8:11, $a8 }
    # exp(score - largest) in place ($m14 reads one quad ahead of $m11;
    # the last read is the scratch's spare panel).
    { ld128pi $a0:3, $m14, 16 ; f32v4sub $a4:7, $a0:3, $a8:11 }
    { rpt $m12, 2 ; f32v4exp $a4:7, $a4:7 }
    { st128pi $a4:7, $m11, 16 ; f32v4sub $a4:7, $a0:3, $a8:11 }
    { ld128pi $a0:3, $m14, 16 ; f32v4exp $a4:7, $a4:7 }
    st128pi $a4:7, $m11, 16
    # Their sum over the item's keys, one at a time in key order.
    ldw $m14, $m0, 44
    shli $m11, $m10, 2
    add $m14, $m14, $m11
    addi $m11, $m5, -1
    { ld32pi $a0, $m14, 4 ; f32v4zero $a4:7 }
    rpt $m11, 1
    { ld32pi $a0, $m14, 4 ; f32v4add $a4:7, $a4:7, $a0:3 }
    { ldw $m14, $m0, 44 ; f32v4add $a4:7, $a4:7, $a0:3 }
    # Each divided by the sum: q = e r, e - q sum exactly, q + that x r
    # ($a8:11 r = 1/sum, $a12:15 -sum).
    { add $m11, $m14, $mzero ; f32v4recip $a8:11, $a4:7 }
    { addi $m12, $m12, 1 ; f32v4zero $a12:15 }
    { ld128pi $a0:3, $m14, 16 ; f32v4sub $a12:15, $a12:15, $a4:7 }
    f32v4splat $a8:11, $a8
    f32v4splat $a12:15, $a12
    { rpt $m12, 3 ; f32v4mul $a4:7, $a0:3, $a8:11 }
    f32v4mac $a0:3, $a4:7, $a12:15
    { ld128pi $a0:3, $m14, 16 ; f32v4mac $a4:7, $a0:3, $a8:11 }
    { st128pi $a4:7, $m11, 16 ; f32v4mul $a4:7, $a0:3, $a8:11 }
.endm

# Output. Registers: $m4 out[r][e]  $m6 v: from the end of a column's key
# panels to the next column's first  $m7 out column stride  $m8 columns
# left  $m9 loop count  $m10 v  $m11 scratch  $m14 probabilities.
# in_shift: log2(16 x input bytes), out_shift: log2(16 x output bytes).
.macro ATTN_OUTPUT_SETUP in_shift, out_shift, loop_shift
    ATTN_PANELS
    ldw $m11, $m0, 44
    add $m14, $m11, $mzero
    ldw $m6, $m0, 20
    shli $m7, $m6, \out_shift
    shli $m6, $m6, \in_shift
    shli $m12, $m9, \in_shift
    sub $m6, $m6, $m12
    ldw $m10, $m0, 32
    shri $m12, $m3, 4
    shli $m12, $m12, \in_shift
    add $m10, $m10, $m12
    ldw $m4, $m0, 36
    shli $m12, $m2, \out_shift - 4
    add $m4, $m4, $m12
    ldw $m8, $m0, 16
    shli $m9, $m9, \loop_shift
    addi $m9, $m9, -1
.endm

# One column: $a0:3 = the four lanes' sums. FP32 v: a quad of p and one
# of v per 2 bundles.
.macro ATTN_COLUMN_F32
    ld128pi $a4:7, $m14, 16
    ld128pi $a8:11, $m10, 16
    { rpt $m9, 2 ; f32v4zero $a0:3 }
    { ld128pi $a4:7, $m14, 16 ; f32v4mac $a0:3, $a4:7, $a8:11 }
    ld128pi $a8:11, $m10, 16
    { add $m10, $m10, $m6 ; f32v4mac $a0:3, $a4:7, $a8:11 }
.endm

# FP16 v: 8 keys (two quads of p) per 4 bundles.
.macro ATTN_COLUMN_F16
    { ld128pi $a12:15, $m10, 16 ; f32v4zero $a0:3 }
    { ld128pi $a4:7, $m14, 16 ; f16tof32lo $a16:19, $a12:15 }
    { ld128pi $a8:11, $m14, 16 ; f16tof32hi $a20:23, $a12:15 }
    { rpt $m9, 4 ; f32v4mac $a0:3, $a4:7, $a16:19 }
    { ld128pi $a12:15, $m10, 16 ; f32v4mac $a0:3, $a8:11, $a20:23 }
    { ld128pi $a4:7, $m14, 16 ; f16tof32lo $a16:19, $a12:15 }
    { ld128pi $a8:11, $m14, 16 ; f16tof32hi $a20:23, $a12:15 }
    f32v4mac $a0:3, $a4:7, $a16:19
    { add $m10, $m10, $m6 ; f32v4mac $a0:3, $a8:11, $a20:23 }
.endm

.macro ATTN_STORE_F32
    { addi $m8, $m8, -1 ; f32v4hsum $a0, $a0:3 }
    { add $m14, $m11, $mzero ; fnop }
    st32 $a0, $m4, 0
.endm

.macro ATTN_STORE_F16
    { addi $m8, $m8, -1 ; f32v4hsum $a0, $a0:3 }
    { add $m14, $m11, $mzero ; f32tof16 $a0:1, $a0:3 }
    movam $m12, $a0
    sth $m12, $m4, 0
.endm

.macro ATTN_OUTPUT name, in, out, in_shift, out_shift, loop_shift
    ATTN_OUTPUT_SETUP \in_shift, \out_shift, \loop_shift
\name\()_column:
    ATTN_COLUMN_\in
    ATTN_STORE_\out
    add $m4, $m4, $m7
    brnz $m8, \name\()_column
.endm

# name: kernel symbol; in, out: F16 or F32; in_shift / out_shift:
# log2(16 x element bytes); loop_shift: log2 of the output loop's
# iterations per key panel (F32 v: 4 quads, F16 v: 2 pairs of quads).
.macro ATTENTION name, in, out, in_shift, out_shift, loop_shift
.section .kernels, "x"
.global \name
.type \name, @kernel
\name:
    ldw $m2, $m0, 0
    ldw $m1, $m0, 4
    brz $m1, \name\()_done
    add $m1, $m1, $m2                # end row
    ATTN_ITEM_START
    setzi $m4, 0
    sethi $m4, 0xff80
    movma $a30, $m4                  # -inf
    ld32 $a31, $m0, 40               # scale
\name\()_row:
    ATTN_SCORES \name, \in
    ATTN_SOFTMAX
    ATTN_OUTPUT \name, \in, \out, \in_shift, \out_shift, \loop_shift
    # Next row; the next item when it starts.
    addi $m2, $m2, 1
    sub $m4, $m2, $m3
    ldw $m5, $m0, 8
    cmpeq $m4, $m4, $m5
    sub $m4, $mzero, $m4
    and $m4, $m4, $m5
    add $m3, $m3, $m4
    sub $m4, $m2, $m1
    brnz $m4, \name\()_row
\name\()_done:
    exit
\name\()_read:
    ATTN_READ_BLOCKS_\in \name
.size \name, . - \name
.endm
