# Every instruction of the table once: a change of any encoding shows here.
.text
start:
    nop
    setzi $m1, 1048575
    sethi $m1, 65535
    add $m1, $m2, $mzero
    sub $m1, $m2, $mzero
    mul $m1, $m2, $mzero
    and $m1, $m2, $mzero
    or $m1, $m2, $mzero
    xor $m1, $m2, $mzero
    shl $m1, $m2, $mzero
    shr $m1, $m2, $mzero
    sar $m1, $m2, $mzero
    min $m1, $m2, $mzero
    max $m1, $m2, $mzero
    cmpeq $m1, $m2, $mzero
    cmpne $m1, $m2, $mzero
    cmplt $m1, $m2, $mzero
    cmpult $m1, $m2, $mzero
    addi $m1, $m2, -32768
    muli $m1, $m2, -32768
    andi $m1, $m2, 65535
    ori $m1, $m2, 65535
    shli $m1, $m2, 65535
    shri $m1, $m2, 65535
    cmplti $m1, $m2, -32768
    cmpeqi $m1, $m2, -32768
    ld32 $a3, $m1, -16384
    ld32pi $a3, $m1, -16384
    ld64 $a6:7, $m1, -16384
    ld64pi $a6:7, $m1, -16384
    ld128 $a8:11, $m1, -16384
    ld128pi $a8:11, $m1, -16384
    st32 $a3, $m1, -16384
    st32pi $a3, $m1, -16384
    st64 $a6:7, $m1, -16384
    st64pi $a6:7, $m1, -16384
    st128 $a8:11, $m1, -16384
    st128pi $a8:11, $m1, -16384
    ld64r $a6:7, $m1, $m2
    ld128r $a8:11, $m1, $m2
    st64r $a6:7, $m1, $m2
    st128r $a8:11, $m1, $m2
    ldw $m1, $m2, -32768
    stw $m1, $m2, -32768
    ldwpi $m1, $m2, -32768
    stwpi $m1, $m2, -32768
    ldhu $m1, $m2, -32768
    sth $m1, $m2, -32768
    ldbu $m1, $m2, -32768
    stb $m1, $m2, -32768
    movma $a3, $m1
    movam $m1, $a3
    br .-1
    brz $m1, start
    brnz $m1, start
    call $m1, start
    jr $m1
    rpt $m1, 255
    rpti 4095, 255
    run $m1, $m2
    exit
    wsync
    sync
    halt
    getcount $m1
    gettile $m1
    send $m1, $m2, $mzero
    recv $m1, $m2, $mzero
    xwait 1048575
    xdone
    xpat $m7, $m8
    fnop
    amp.f8 $a8:11, $a6:7, 1, f152, f143
    amp.f16 $a8:11, $a28:31, 3
    amp.f32 $a8:11, $a28:31, 15
    accz
    accrd.f16 $a8:11, 15, 1, -32
    accrd.f32 $a8:11, 15, 3, -32
    f32v4add $a8:11, $a28:31, $a8:11
    f32v4sub $a8:11, $a28:31, $a8:11
    f32v4mul $a8:11, $a28:31, $a8:11
    f32v4max $a8:11, $a28:31, $a8:11
    f32v4min $a8:11, $a28:31, $a8:11
    f32v4mac $a8:11, $a28:31, $a8:11
    f16v8add $a8:11, $a28:31, $a8:11
    f16v8mul $a8:11, $a28:31, $a8:11
    f16v8max $a8:11, $a28:31, $a8:11
    f32v4adds $a8:11, $a28:31, $a3
    f32v4muls $a8:11, $a28:31, $a3
    f32v4addlo $a8:11, $a28:31, $a4:7
    f32v4addhi $a8:11, $a28:31, $a4:7
    f32v4tanh $a8:11, $a28:31
    f32v4exp $a8:11, $a28:31
    f32v4erf $a8:11, $a28:31
    f32v4rsqrt $a8:11, $a28:31
    f32v4recip $a8:11, $a28:31
    f32v4mov $a8:11, $a28:31
    f32v4gelu $a8:11, $a28:31, 1
    f16v4gelu $a6:7, $a30:31, 1
    f32v4hsum $a3, $a8:11
    f32v4hmax $a3, $a8:11
    f32v4splat $a8:11, $a3
    f32v4zero $a8:11
    f16tof32lo $a8:11, $a28:31
    f16tof32hi $a8:11, $a28:31
    f32tof16 $a6:7, $a8:11
    f16tof8 $a6:7, $a8:11, f152, -32
    f8tof16 $a8:11, $a6:7, f152, -32
    f32tof8 $a3, $a8:11, f152, -32
    f8tof32 $a8:11, $a3, f152, -32
