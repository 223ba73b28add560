// The disassembler: machine code back to assembly text that the assembler
// reads back to the same bytes. Symbols become labels and name branch
// targets; a bundle that does not decode, or whose two instructions write
// one $a register (which the assembler rejects), is shown as `.word` with a
// comment.
#pragma once

#include "isa/linker.h"
#include "isa/object.h"

#include <span>
#include <string>

namespace tilec::isa {

// The body of one section: `bytes` as bundles (executable) or data words,
// at `base`. Symbols inside the range label their address; each name is
// printed once, so the text always reassembles.
std::string disassemble(std::span<const std::uint8_t> bytes, std::uint32_t base, bool executable,
                        std::span<const LinkedSymbol> symbols = {});

// Every segment of an image as a `.section` with its bytes.
std::string disassemble_image(const Image& image);

// A readable dump of an object: each section's bytes as hex words with the
// disassembly of its bundles, then symbols and relocations. Deterministic:
// the assembler's golden tests compare it.
std::string object_listing(const Object& object);

}  // namespace tilec::isa
