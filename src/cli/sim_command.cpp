// `tilec sim`: run a package on the simulated device. Inputs and parameters
// come from a tensor directory (NAME.npy + manifest.json), outputs go to
// another; a fault is a one-line error naming tile, context, pc and bundle.
#include "cli/case_flags.h"
#include "cli/commands.h"
#include "graph/npy.h"
#include "package/package_file.h"
#include "sim/device.h"
#include "support/error.h"
#include "support/output_path.h"
#include "support/span.h"
#include "target/machine.h"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

namespace tilec::cli {

namespace {

struct SimCommandOptions {
  std::string package;
  std::string inputs;
  std::string outputs;
  std::string target;
  std::uint64_t max_cycles = sim::kDefaultMaxCycles;
  bool json = false;
};

void load_inputs(sim::Device& device, const package::Package& contents, const std::string& directory) {
  std::map<std::string, graph::TensorType> types;
  std::vector<std::string> names;
  for (const package::Binding& binding : contents.bindings)
    if (binding.role != package::BindingRole::Output) {
      types.emplace(binding.name, binding.type);
      names.push_back(binding.name);
    }
  if (types.empty()) return;
  if (directory.empty())
    throw_bad_input("--inputs", "the package needs {} ({}): give --inputs DIR",
                    names.size() == 1 ? "a tensor" : fmt::format("{} tensors", names.size()),
                    fmt::join(names, ", "));
  for (auto& [name, tensor] : graph::read_tensor_dir(directory, types)) device.write(name, tensor);
}

void simulate(const SimCommandOptions& options) {
  if (!options.outputs.empty()) check_output_folder("--outputs", options.outputs);
  package::Package contents = package::read_package(options.package);
  MachineModel machine = machine_by_name(options.target.empty() ? contents.target : options.target);
  sim::Device device(contents, machine);
  load_inputs(device, contents, options.inputs);

  sim::SimOptions run_options;
  run_options.record_profile = false;
  run_options.max_cycles = options.max_cycles;
  sim::RunResult result;
  double seconds = 0;
  {
    Span span("simulate");
    result = device.run(run_options);
    seconds = span.elapsed_seconds();
  }

  if (!options.outputs.empty()) {
    graph::TensorMap outputs;
    for (const package::Binding& binding : contents.bindings)
      if (binding.role == package::BindingRole::Output) outputs.emplace(binding.name, device.read(binding.name));
    graph::write_tensor_dir(options.outputs, outputs, graph::TensorRole::Output);
  }

  const double bundles = static_cast<double>(result.total_bundles());
  std::uint64_t bytes_sent = 0;
  for (const sim::TileStats& tile : result.tiles) bytes_sent += tile.bytes_sent;
  if (options.json) {
    nlohmann::json report = {
        {"package", options.package},
        {"target", machine.name},
        {"tiles", machine.tiles},
        {"cycles", result.cycles},
        {"syncs", result.syncs},
        {"bundles", result.total_bundles()},
        {"amp_macs", result.total_amp_macs()},
        {"bytes_sent", bytes_sent},
        {"seconds", seconds},
        {"bundles_per_second", seconds > 0 ? bundles / seconds : 0.0},
    };
    fmt::print("{}\n", report.dump(2));
    return;
  }
  fmt::print("{} cycles on {} ({} syncs): {} bundles, {} AMP MACs, {} bytes exchanged; simulated in {:.3g} s ({:.3g} M bundles/s)\n",
             result.cycles, machine.name, result.syncs, result.total_bundles(), result.total_amp_macs(),
             bytes_sent, seconds, seconds > 0 ? bundles / seconds / 1e6 : 0.0);
}

}  // namespace

void add_sim_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("sim", "Run a package on the cycle-level simulator");
  auto options = std::make_shared<SimCommandOptions>();
  command->add_option("PACKAGE", options->package, "Package file (.tpk)")->required();
  command->add_option("--inputs", options->inputs,
                      "Directory of the input and parameter tensors (NAME.npy, manifest.json)");
  command->add_option("--outputs", options->outputs, "Directory to write the output tensors to");
  command->add_option("--target", options->target,
                      "Machine to run on: any --target spelling (default: the package's target)");
  add_max_cycles_flag(*command, options->max_cycles);
  command->add_flag("--json", options->json, "Print the run's figures as JSON");
  command->callback([options] { simulate(*options); });
}

}  // namespace tilec::cli
