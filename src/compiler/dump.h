// Text dumps of the compiler's IRs (--dump-after STAGE, tests, debugging).
#pragma once

#include "compiler/chain.h"
#include "compiler/lir.h"
#include "compiler/mid.h"

#include <string>

namespace tilec::compiler {

std::string dump_chain(const Chain& chain);
std::string dump_mid(const MidProgram& program);
std::string dump_lir(const Lir& lir);

}  // namespace tilec::compiler
