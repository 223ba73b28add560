# Self-attention over whole rows, in the panel format:
#   out[r] = softmax(scale x q[r] k[t]^T over the keys t of r's item) v
# computed in FP32 as src/graph/reference.cpp computes it, except for the
# order of the last sum (below).
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
#   +0  first query row (< 2^22)    +4  query rows (0: exit at once)
#   +8  S    +12 D    +16 E    +20 P
#   +24 q    +28 k    +32 v    +36 out    (column 0, panel 0)
#   +40 scale (FP32)
#   +44 scratch: two regions of 16 (ceil(S/16) + 2) FP32 each (see
#       attention_scratch_bytes), 16-byte aligned in interleaved memory
#
# Rows are taken two at a time (r even, r + 1 in the worker's rows and in
# r's item), else one at a time. For each, with the item's keys in the key
# panels kp0 .. kp0 + n - 1 (n = panels; the first holds `lead` keys of
# the item before):
#  1. scores: for each key panel, the AMP sums q[r][d] k[t][d] over d
#     (q of rows 4i..4i+3 (FP16) or 2i, 2i+1 (FP32) against the panel's 16
#     keys; fused multiply-adds from +0 in d order, exactly the host's
#     GEMM); rows r and r + 1 of the accumulators are read, times scale,
#     into the two scratch regions;
#  2. for each row: the lanes of keys outside the item set to -inf; softmax
#     in place: the largest score, exp(score - largest), their sum in key
#     order (one key at a time), then each exponential divided by the sum,
#     correctly rounded (a reciprocal, then Markstein's correction with
#     fused multiply-adds): the host's probabilities, bit for bit;
#  3. for each column e: p x v[.][e] summed over the key panels in four FP32
#     lanes (lane j: keys 4i + j in order, fused multiply-adds), then
#     (lane 0 + lane 1) + (lane 2 + lane 3), rounded once to the output
#     type. The host sums p[t] v[t][e] over t in one sequence: the results
#     differ by the rounding of the two orders. Two rows share each load of
#     v (and its conversion from FP16).
# Keys of other items in the item's panels get p = 0 and add nothing, as
# long as their v values are finite (rows R .. 16P - 1 of v included).
#
# Registers across rows: $m0 arguments  $m1 end row  $m2 row r
#   $m3 first key of r's item  $m4 rows this time (1 or 2)
#   $a30 -inf  $a31 scale

# $m9 = the item's key panels, $m10 = keys before the item in the first.
.macro ATTN_PANELS
    ldw $m9, $m0, 8
    andi $m10, $m3, 15
    add $m9, $m9, $m10
    addi $m9, $m9, -1
    shri $m9, $m9, 4
    addi $m9, $m9, 1
.endm

# \reg = bytes of one scratch region: 16 (ceil(S/16) + 2) FP32.
.macro ATTN_REGION reg
    ldw \reg, $m0, 8
    addi \reg, \reg, 15
    shri \reg, \reg, 4
    addi \reg, \reg, 2
    shli \reg, \reg, 6
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

# $m4 = 2 when r is even and r + 1 is one of this worker's rows of r's
# item, else 1.
.macro ATTN_ROWS_THIS_TIME
    andi $m5, $m2, 1
    addi $m6, $m2, 1
    cmpult $m7, $m6, $m1
    sub $m6, $m6, $m3
    ldw $m8, $m0, 8
    cmpult $m6, $m6, $m8
    and $m7, $m7, $m6
    cmpeqi $m5, $m5, 0
    and $m7, $m7, $m5
    addi $m4, $m7, 1
.endm

# Scores. Registers: $m5 k (column 0 of the key panel)  $m6 k walk (the
# next column)  $m7 q - k (q holds the 8 bytes of r's group of rows)  $m8
# region of row r + 1  $m9 panels left  $m11 column stride  $m12 D - 1
# $m13 the read block of r's accumulator row  $m14 region of row r.
# in_shift: log2(16 x input bytes); group_shift: log2(rows per ld64 of q).
.macro ATTN_SCORES_SETUP name, in_shift, group_shift
    ldw $m11, $m0, 20
    shli $m11, $m11, \in_shift       # column stride: P x 16 x bytes
    ldw $m12, $m0, 12
    addi $m12, $m12, -1
    ldw $m5, $m0, 28
    shri $m6, $m3, 4
    shli $m6, $m6, \in_shift
    add $m5, $m5, $m6
    ldw $m7, $m0, 24
    shri $m6, $m2, \group_shift
    shli $m6, $m6, 3
    add $m7, $m7, $m6
    sub $m7, $m7, $m5
    andi $m13, $m2, (1 << \group_shift) - 1  # r's row of the accumulators
    shli $m13, $m13, 7               # read blocks of 16 bundles
    setzi $m6, \name\()_read
    add $m13, $m13, $m6
    add $m6, $m5, $m11
    ATTN_PANELS
    ldw $m14, $m0, 44
    ATTN_REGION $m8
    add $m8, $m8, $m14
.endm

# FP16: the AMP's rows 0-3 are q of rows 4i..4i+3 (one ld64), its columns
# the panel's 16 keys (two ld128).
.macro ATTN_SCORES_PANEL_F16
    { ld128 $a0:3, $m5, 0 ; accz }
    ld128 $a4:7, $m5, 16
    ld64r $a8:9, $m5, $m7
    rpt $m12, 4
    { ld128 $a0:3, $m6, 0 ; amp.f16 $a8:11, $a0:3, 0 }
    { ld128 $a4:7, $m6, 16 ; amp.f16 $a8:11, $a4:7, 1 }
    ld64r $a8:9, $m6, $m7
    add $m6, $m6, $m11
    amp.f16 $a8:11, $a0:3, 0
    { jr $m13 ; amp.f16 $a8:11, $a4:7, 1 }
.endm

# FP32: rows 0-1 are q of rows 2i, 2i + 1; four ld128 of keys.
.macro ATTN_SCORES_PANEL_F32
    { ld128 $a0:3, $m5, 0 ; accz }
    ld128 $a4:7, $m5, 16
    ld128 $a8:11, $m5, 32
    ld128 $a12:15, $m5, 48
    ld64r $a16:17, $m5, $m7
    rpt $m12, 6
    { ld128 $a0:3, $m6, 0 ; amp.f32 $a16:19, $a0:3, 0 }
    { ld128 $a4:7, $m6, 16 ; amp.f32 $a16:19, $a4:7, 1 }
    { ld128 $a8:11, $m6, 32 ; amp.f32 $a16:19, $a8:11, 2 }
    { ld128 $a12:15, $m6, 48 ; amp.f32 $a16:19, $a12:15, 3 }
    ld64r $a16:17, $m6, $m7
    add $m6, $m6, $m11
    amp.f32 $a16:19, $a0:3, 0
    amp.f32 $a16:19, $a4:7, 1
    amp.f32 $a16:19, $a8:11, 2
    { jr $m13 ; amp.f32 $a16:19, $a12:15, 3 }
.endm

# Read block: accumulator rows `row` and `row` + 1 (16 scores each), times
# scale, into the two regions; the next key panel. 16 bundles, the last
# quad's store in the join.
.macro ATTN_READ name, row, panel_bytes
    { addi $m9, $m9, -1 ; accrd.f32 $a0:3, \row, 0, 0 }
    { addi $m5, $m5, \panel_bytes ; f32v4muls $a0:3, $a0:3, $a31 }
    { st128pi $a0:3, $m14, 16 ; accrd.f32 $a0:3, \row, 1, 0 }
    { addi $m7, $m7, -\panel_bytes ; f32v4muls $a0:3, $a0:3, $a31 }
    { st128pi $a0:3, $m14, 16 ; accrd.f32 $a0:3, \row, 2, 0 }
    { add $m6, $m5, $m11 ; f32v4muls $a0:3, $a0:3, $a31 }
    { st128pi $a0:3, $m14, 16 ; accrd.f32 $a0:3, \row, 3, 0 }
    f32v4muls $a0:3, $a0:3, $a31
    { st128pi $a0:3, $m14, 16 ; accrd.f32 $a0:3, \row + 1, 0, 0 }
    f32v4muls $a0:3, $a0:3, $a31
    { st128pi $a0:3, $m8, 16 ; accrd.f32 $a0:3, \row + 1, 1, 0 }
    f32v4muls $a0:3, $a0:3, $a31
    { st128pi $a0:3, $m8, 16 ; accrd.f32 $a0:3, \row + 1, 2, 0 }
    f32v4muls $a0:3, $a0:3, $a31
    { st128pi $a0:3, $m8, 16 ; accrd.f32 $a0:3, \row + 1, 3, 0 }
    { br \name\()_scaled ; f32v4muls $a0:3, $a0:3, $a31 }
.endm

.macro ATTN_READ_BLOCKS_F16 name
    ATTN_READ \name, 0, 32
    ATTN_READ \name, 1, 32
    ATTN_READ \name, 2, 32
    ATTN_READ \name, 3, 32
.endm

.macro ATTN_READ_BLOCKS_F32 name
    ATTN_READ \name, 0, 64
    ATTN_READ \name, 1, 64
.endm

.macro ATTN_SCORES name, in, in_shift, group_shift
    ATTN_SCORES_SETUP \name, \in_shift, \group_shift
\name\()_panel:
    ATTN_SCORES_PANEL_\in
\name\()_scaled:
    st128pi $a0:3, $m8, 16
    brnz $m9, \name\()_panel
.endm

# Softmax of one region ($m13) in place. $m5 S, $m9 panels, $m10 lead.
.macro ATTN_SOFTMAX
    add $m14, $m13, $mzero
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
    add $m14, $m13, $mzero
    shli $m12, $m9, 2
    addi $m12, $m12, -1              # quads - 1
    { ld128pi $a0:3, $m14, 16 ; f32v4splat $a4:7, $a30 }
    rpt $m12, 1
    { ld128pi $a0:3, $m14, 16 ; f32v4max $a4:7, $a4:7, $a0:3 }
    { add $m14, $m13, $mzero ; f32v4max $a4:7, $a4:7, $a0:3 }
    { add $m11, $m13, $mzero ; f32v4hmax $a8, $a4:7 }
    { ld128pi $a0:3, $m14, 16 ; f32v4splat $a8:11, $a8 }
    # exp(score - largest) in place ($m14 reads one quad ahead of $m11;
    # the last read is the region's spare panel).
    { ld128pi $a0:3, $m14, 16 ; f32v4sub $a4:7, $a0:3, $a8:11 }
    { rpt $m12, 2 ; f32v4exp $a4:7, $a4:7 }
    { st128pi $a4:7, $m11, 16 ; f32v4sub $a4:7, $a0:3, $a8:11 }
    { ld128pi $a0:3, $m14, 16 ; f32v4exp $a4:7, $a4:7 }
    st128pi $a4:7, $m11, 16
    # Their sum over the item's keys, one at a time in key order.
    shli $m11, $m10, 2
    add $m14, $m13, $m11
    addi $m11, $m5, -1
    { ld32pi $a0, $m14, 4 ; f32v4zero $a4:7 }
    rpt $m11, 1
    { ld32pi $a0, $m14, 4 ; f32v4add $a4:7, $a4:7, $a0:3 }
    { add $m14, $m13, $mzero ; f32v4add $a4:7, $a4:7, $a0:3 }
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

# Softmax of each of this time's rows ($m8 left, $m6 region bytes).
.macro ATTN_SOFTMAXES name
    ATTN_PANELS
    ldw $m5, $m0, 8
    ldw $m13, $m0, 44
    ATTN_REGION $m6
    add $m8, $m4, $mzero
\name\()_softmax:
    ATTN_SOFTMAX
    add $m13, $m13, $m6
    addi $m8, $m8, -1
    brnz $m8, \name\()_softmax
.endm

# Output. Registers: $m5 out[r][e]  $m6 v: from the end of a column's key
# panels to the next column's first  $m7 out column stride  $m8 columns
# left  $m9 loop count  $m10 v  $m11 region of row r  $m12 region of row
# r + 1  $m13/$m14 probabilities of rows r + 1 / r.
# in_shift / out_shift: log2(16 x input / output bytes); loop_shift:
# log2 of the loops' iterations per key panel (FP32 v: 4 quads, FP16 v:
# 2 pairs of quads; the pair loops run twice as many for FP32).
.macro ATTN_OUTPUT_SETUP in_shift, out_shift
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
    ldw $m5, $m0, 36
    shli $m12, $m2, \out_shift - 4
    add $m5, $m5, $m12
    ldw $m8, $m0, 16
.endm

# One row, one column: $a0:3 = the four lanes' sums. FP32 v: a quad of p
# and one of v per 2 bundles.
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
    add $m14, $m11, $mzero
    st32 $a0, $m5, 0
.endm

.macro ATTN_STORE_F16
    { addi $m8, $m8, -1 ; f32v4hsum $a0, $a0:3 }
    { add $m14, $m11, $mzero ; f32tof16 $a0:1, $a0:3 }
    movam $m12, $a0
    sth $m12, $m5, 0
.endm

# Two rows, one column: $a0:3 and $a4:7 the lanes' sums of rows r, r + 1.
# FP32 v: a quad of v and one of p of each row per 3 bundles ($a12:15
# holds each p quad from its load to its use in the next bundle).
.macro ATTN_PAIR_COLUMN_F32
    { ld128pi $a8:11, $m10, 16 ; f32v4zero $a0:3 }
    { ld128pi $a12:15, $m14, 16 ; f32v4zero $a4:7 }
    rpt $m9, 3
    { ld128pi $a12:15, $m13, 16 ; f32v4mac $a0:3, $a12:15, $a8:11 }
    { ld128pi $a8:11, $m10, 16 ; f32v4mac $a4:7, $a12:15, $a8:11 }
    ld128pi $a12:15, $m14, 16
    { ld128pi $a12:15, $m13, 16 ; f32v4mac $a0:3, $a12:15, $a8:11 }
    { add $m10, $m10, $m6 ; f32v4mac $a4:7, $a12:15, $a8:11 }
.endm

# FP16 v: 8 keys (converted once, four quads of p) per 6 bundles.
.macro ATTN_PAIR_COLUMN_F16
    { ld128pi $a12:15, $m10, 16 ; f32v4zero $a0:3 }
    f32v4zero $a4:7
    { rpt $m9, 6 ; f16tof32lo $a16:19, $a12:15 }
    { ld128pi $a8:11, $m14, 16 ; f16tof32hi $a20:23, $a12:15 }
    { ld128pi $a8:11, $m14, 16 ; f32v4mac $a0:3, $a8:11, $a16:19 }
    { ld128pi $a8:11, $m13, 16 ; f32v4mac $a0:3, $a8:11, $a20:23 }
    { ld128pi $a8:11, $m13, 16 ; f32v4mac $a4:7, $a8:11, $a16:19 }
    { ld128pi $a12:15, $m10, 16 ; f32v4mac $a4:7, $a8:11, $a20:23 }
    f16tof32lo $a16:19, $a12:15
    { ld128pi $a8:11, $m14, 16 ; f16tof32hi $a20:23, $a12:15 }
    { ld128pi $a8:11, $m14, 16 ; f32v4mac $a0:3, $a8:11, $a16:19 }
    { ld128pi $a8:11, $m13, 16 ; f32v4mac $a0:3, $a8:11, $a20:23 }
    { ld128pi $a8:11, $m13, 16 ; f32v4mac $a4:7, $a8:11, $a16:19 }
    { add $m10, $m10, $m6 ; f32v4mac $a4:7, $a8:11, $a20:23 }
.endm

# Rows r, r + 1 (r even) are adjacent: one store of both.
.macro ATTN_PAIR_STORE_F32
    { add $m14, $m11, $mzero ; f32v4hsum $a0, $a0:3 }
    { add $m13, $m12, $mzero ; f32v4hsum $a1, $a4:7 }
    addi $m8, $m8, -1
    st64 $a0:1, $m5, 0
.endm

.macro ATTN_PAIR_STORE_F16
    { add $m14, $m11, $mzero ; f32v4hsum $a0, $a0:3 }
    { add $m13, $m12, $mzero ; f32v4hsum $a1, $a4:7 }
    { addi $m8, $m8, -1 ; f32tof16 $a0:1, $a0:3 }
    st32 $a0, $m5, 0
.endm

.macro ATTN_OUTPUT name, in, out, in_shift, out_shift, loop_shift
    ATTN_OUTPUT_SETUP \in_shift, \out_shift
    addi $m12, $m4, -1
    brnz $m12, \name\()_pair
    shli $m9, $m9, \loop_shift
    addi $m9, $m9, -1
\name\()_column:
    ATTN_COLUMN_\in
    ATTN_STORE_\out
    add $m5, $m5, $m7
    brnz $m8, \name\()_column
    br \name\()_next
\name\()_pair:
    ATTN_REGION $m12
    add $m12, $m12, $m11
    add $m13, $m12, $mzero
    shli $m9, $m9, \loop_shift
    addi $m9, $m9, -1
\name\()_pair_column:
    ATTN_PAIR_COLUMN_\in
    ATTN_PAIR_STORE_\out
    add $m5, $m5, $m7
    brnz $m8, \name\()_pair_column
.endm

# name: kernel symbol; in, out: F16 or F32; in_shift / out_shift:
# log2(16 x element bytes); loop_shift: log2 of the output loops'
# iterations per key panel (FP32 v: 4, FP16 v: 2); group_shift: log2 of
# the query rows one ld64 of q holds (FP16: 2, FP32: 1).
.macro ATTENTION name, in, out, in_shift, out_shift, loop_shift, group_shift
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
    ATTN_ROWS_THIS_TIME
    ATTN_SCORES \name, \in, \in_shift, \group_shift
    ATTN_SOFTMAXES \name
    ATTN_OUTPUT \name, \in, \out, \in_shift, \out_shift, \loop_shift
\name\()_next:
    # The next rows; the next item when it starts.
    add $m2, $m2, $m4
    sub $m5, $m2, $m3
    ldw $m6, $m0, 8
    cmpeq $m5, $m5, $m6
    sub $m5, $mzero, $m5
    and $m5, $m5, $m6
    add $m3, $m3, $m5
    sub $m5, $m2, $m1
    brnz $m5, \name\()_row
\name\()_done:
    exit
\name\()_read:
    ATTN_READ_BLOCKS_\in \name
.size \name, . - \name
.endm
