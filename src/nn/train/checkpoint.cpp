// Checkpoints: Trainer::save_checkpoint / load_checkpoint, save_model / load_model, through
// io's safetensors. Its own library (tapevm_nn_train_io) so that the modules, optimizers and
// the training loop build and test without src/nn/io.
#include <cstdio>
#include <cstdlib>
#include <map>

#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/safetensors.hpp"
#include "tapevm/nn/trainer.hpp"

namespace tapevm::nn {
namespace {

std::string exact(double value) {
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%a", value);
    return buffer;
}

double parse_double(const SafetensorsMetadata& metadata, const std::string& key, const std::string& file) {
    const auto it = metadata.find(key);
    if (it == metadata.end()) throw Error("load_checkpoint: " + file + ": metadata '" + key + "' missing");
    return std::strtod(it->second.c_str(), nullptr);
}

std::uint64_t parse_count(const SafetensorsMetadata& metadata, const std::string& key,
                          const std::string& file) {
    const auto it = metadata.find(key);
    if (it == metadata.end()) throw Error("load_checkpoint: " + file + ": metadata '" + key + "' missing");
    return std::strtoull(it->second.c_str(), nullptr, 10);
}

// Writes `key` of `file` into `target` (same shape; bytes copied as they are when the dtypes
// agree, else converted).
void restore(const SafetensorsFile& file, const std::string& key, const Tensor& target, const char* what) {
    if (!file.contains(key))
        throw Error(std::string(what) + ": " + file.path() + ": no tensor '" + key + "'");
    if (file.shape(key) != target.shape()) {
        throw Error(std::string(what) + ": " + file.path() + ": '" + key + "' has shape " +
                    shape_string(file.shape(key)) + ", the model's is " + shape_string(target.shape()));
    }
    if (file.dtype(key) == target.dtype()) {
        target.assign_bytes(file.bytes(key));
    } else {
        copy(file.load(key, target.device(), target.dtype()), target);
    }
}

std::vector<std::pair<std::string, Dropout*>> dropouts(Module& module) {
    std::vector<std::pair<std::string, Dropout*>> out;
    for (auto& [name, child] : module.modules()) {
        if (auto* dropout = dynamic_cast<Dropout*>(child)) out.emplace_back(name, dropout);
    }
    return out;
}

}  // namespace

void Trainer::save_checkpoint(const std::filesystem::path& path,
                              const std::vector<std::pair<std::string, std::string>>& extra) const {
    std::map<std::string, Tensor> tensors;
    Module& module = objective_.module();
    for (const NamedParameter& p : module.parameters()) tensors[p.name] = p.parameter->value;
    for (const auto& [name, tensor] : optimizer_.state()) tensors["optimizer." + name] = tensor;
    SafetensorsMetadata metadata;
    for (const auto& [key, value] : extra) metadata[key] = value;
    metadata["format"] = "tapevm-checkpoint";
    metadata["step"] = std::to_string(step_);
    metadata["optimizer.steps"] = std::to_string(optimizer_.steps());
    metadata["optimizer.lr"] = exact(optimizer_.lr());
    if (options_.loss_scaler) {
        metadata["loss_scaler.scale"] = exact(options_.loss_scaler->scale());
        metadata["loss_scaler.good_steps"] = std::to_string(options_.loss_scaler->good_steps());
    }
    for (const auto& [name, dropout] : dropouts(module)) {
        metadata["rng." + name + ".seed"] = std::to_string(dropout->seed());
        metadata["rng." + name + ".counter"] = std::to_string(dropout->counter());
    }
    save_safetensors(path, tensors, metadata);
}

void Trainer::load_checkpoint(const std::filesystem::path& path) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    const SafetensorsMetadata& metadata = file.metadata();
    const std::string name = path.string();
    Module& module = objective_.module();
    for (const NamedParameter& p : module.parameters()) {
        restore(file, p.name, p.parameter->value, "load_checkpoint");
        if (p.parameter->compute.defined()) copy(p.parameter->value, p.parameter->compute);
    }
    for (const auto& [key, tensor] : optimizer_.state())
        restore(file, "optimizer." + key, tensor, "load_checkpoint");
    step_ = parse_count(metadata, "step", name);
    optimizer_.set_steps(parse_count(metadata, "optimizer.steps", name));
    optimizer_.set_lr(parse_double(metadata, "optimizer.lr", name));
    if (options_.loss_scaler) {
        options_.loss_scaler->set_state(parse_double(metadata, "loss_scaler.scale", name),
                                        parse_count(metadata, "loss_scaler.good_steps", name));
    }
    for (const auto& [key, dropout] : dropouts(module)) {
        dropout->set_seed(parse_count(metadata, "rng." + key + ".seed", name));
        dropout->set_counter(parse_count(metadata, "rng." + key + ".counter", name));
    }
    module.zero_grad();
}

void save_model(Module& module, const std::filesystem::path& path,
                const std::vector<std::pair<std::string, std::string>>& metadata) {
    std::map<std::string, Tensor> tensors;
    for (const NamedParameter& p : module.parameters()) tensors[p.name] = p.parameter->value;
    SafetensorsMetadata meta;
    for (const auto& [key, value] : metadata) meta[key] = value;
    save_safetensors(path, tensors, meta);
}

void load_model(Module& module, const std::filesystem::path& path) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    for (const NamedParameter& p : module.parameters()) {
        restore(file, p.name, p.parameter->value, "load_model");
        if (p.parameter->compute.defined()) copy(p.parameter->value, p.parameter->compute);
    }
}

}  // namespace tapevm::nn
