// Text dumps of the compiler's IRs (--dump-after STAGE, tests, debugging).
#pragma once

#include "compiler/chain.h"
#include "compiler/exchange_schedule.h"
#include "compiler/lir.h"
#include "compiler/mid.h"
#include "compiler/program_estimate.h"
#include "compiler/tile_code.h"
#include "isa/linker.h"
#include "isa/object.h"
#include "package/package.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::compiler {

std::string dump_chain(const Chain& chain);
std::string dump_mid(const MidProgram& program);
std::string dump_lir(const Lir& lir);
// One tile's exchange actions per phase, with planned cycles.
std::string dump_exchanges(const Lir& lir, const ExchangePlan& plan, int tile);
// Each phase's estimate: its slowest tile's exchange and compute.
std::string dump_program_estimate(const ProgramEstimate& estimate);
std::string dump_exchange_code(const ExchangeCode& code, int tile);
std::string dump_arguments(const std::vector<std::uint8_t>& bytes, std::uint32_t address);
std::string dump_program(const std::vector<std::uint8_t>& code, std::uint32_t address);
std::string object_summary(const isa::Object& object);
std::string image_summary(const isa::Image& image);
std::string package_summary(const package::Package& package);

}  // namespace tilec::compiler
