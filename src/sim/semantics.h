// Every instruction's semantics, one function per instruction named after
// its id in isa/instructions.def:
//   SEMANTICS(Add) { x.m(0) = x.m(1) + x.m(2); }
// `x` is an Exec (sim/exec.h). Each function is a template over the Exec
// type, so the fast and the traced variants come from the same source.
#pragma once

#define SEMANTICS(id) template <typename X> [[gnu::always_inline]] inline void id([[maybe_unused]] X& x)
#include "sim/semantics_main.h"
#include "sim/semantics_float.h"
#undef SEMANTICS
