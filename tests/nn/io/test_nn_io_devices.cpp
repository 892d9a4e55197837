// src/nn/io with tensors on devices: safetensors save/load round trips of every dtype on the
// reference and CPU devices (and conversion between them), DataLoader batches against the
// rows they name, TextDataset uploads with and without prefetch.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include "tapevm/nn/data.hpp"
#include "tapevm/nn/safetensors.hpp"

using namespace tapevm::nn;

namespace {

std::filesystem::path temporary_path(const std::string& name) {
    return std::filesystem::temp_directory_path() /
           ("tapevm_test_" + std::to_string(::getpid()) + "_" + name);
}

/// Values exact in every float dtype (small integers and halves), negative ones included.
std::vector<double> sample_values(std::size_t count, double scale = 1) {
    std::vector<double> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = scale * (double(i % 17) - 8) / 2;
    return values;
}

}  // namespace

TEST_CASE("save and load every dtype on the reference and CPU devices") {
    for (const Device& device : {Device::reference(), Device::cpu({.threads = 1})}) {
        CAPTURE(device.name());
        std::map<std::string, Tensor> tensors;
        for (DType dtype : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32}) {
            if (!device.supports(dtype)) continue;
            const Shape shape = {3, 5};
            tensors["t." + std::string(dtype_name(dtype))] = device.upload(shape, sample_values(15), dtype);
        }
        tensors["scalar"] = device.upload({}, std::vector<std::int32_t>{-9});
        tensors["empty"] = device.zeros({0, 3}, DType::i32);
        const std::filesystem::path path = temporary_path("devices.safetensors");
        save_safetensors(path, tensors, {{"device", device.name()}});
        CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));

        const SafetensorsFile file = SafetensorsFile::open(path);
        CHECK(file.metadata().at("device") == device.name());
        CHECK(file.keys().size() == tensors.size());
        for (const auto& [key, tensor] : tensors) {
            const std::string& name = key;  // clang 14 cannot capture a structured binding (CAPTURE)
            CAPTURE(name);
            CHECK(file.dtype(name) == tensor.dtype());
            CHECK(file.shape(name) == tensor.shape());
            const Tensor loaded = file.load(name, device);
            CHECK(loaded.dtype() == tensor.dtype());
            CHECK(loaded.shape() == tensor.shape());
            CHECK(loaded.to_bytes() == tensor.to_bytes());
            CHECK(loaded.to_double() == tensor.to_double());
        }
        const std::map<std::string, Tensor> all = file.load_all(device);
        CHECK(all.size() == tensors.size());
        std::filesystem::remove(path);
    }
}

TEST_CASE("a file written on one device loads on the other, converted") {
    const Device reference = Device::reference();
    const Device cpu = Device::cpu({.threads = 1});
    const std::filesystem::path path = temporary_path("convert.safetensors");
    save_safetensors(path, {{"w", cpu.upload({2, 4}, sample_values(8, 0.25), DType::bf16)},
                            {"d", reference.upload({5}, sample_values(5), DType::f64)}});
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::filesystem::remove(path);
    const Tensor w = file.load("w", reference, DType::f64);
    CHECK(w.dtype() == DType::f64);
    CHECK(w.to_double() == sample_values(8, 0.25));
    const Tensor d = file.load("d", cpu, DType::f32);
    CHECK(d.dtype() == DType::f32);
    CHECK(d.to_double() == sample_values(5));
    // The reference device has no bf16: loading without conversion is its typed error.
    CHECK_THROWS_AS(file.load("w", reference), tapevm::Error);
}

TEST_CASE("save refuses undefined tensors and unwritable paths") {
    const Device reference = Device::reference();
    CHECK_THROWS_WITH_AS(save_safetensors(temporary_path("undefined.safetensors"), {{"x", Tensor()}}),
                         doctest::Contains("tensor 'x'"), SafetensorsError);
    CHECK_THROWS_AS(
        save_safetensors("/nonexistent/dir/x.safetensors", {{"x", reference.zeros({1}, DType::f64)}}),
        SafetensorsError);
}

TEST_CASE("DataLoader batches hold the rows their indices name, on the target device") {
    const Device cpu = Device::cpu({.threads = 1});
    std::vector<float> features(10 * 3);
    std::vector<std::int32_t> labels(10);
    for (std::size_t i = 0; i < 10; ++i) {
        labels[i] = std::int32_t(100 + i);
        for (std::size_t j = 0; j < 3; ++j) features[i * 3 + j] = float(i) + float(j) / 4;
    }
    const Tensor x = cpu.upload({10, 3}, std::span<const float>(features), DType::f32);
    const Tensor y = cpu.upload({10}, std::span<const std::int32_t>(labels));
    DataLoader loader({x, y}, {.batch_size = 4, .shuffle = true, .seed = 2});
    CHECK(loader.batches_per_epoch() == 3);
    const DataLoaderState start = loader.state();
    std::vector<DataBatch> batches;
    for (int i = 0; i < 4; ++i) batches.push_back(loader.next());
    CHECK(batches[3].epoch == 1);
    for (const DataBatch& batch : batches) {
        REQUIRE(batch.tensors.size() == 2);
        CHECK(batch.tensors[0].shape() == Shape{batch.indices.size(), 3});
        CHECK(batch.tensors[1].shape() == Shape{batch.indices.size()});
        const std::vector<float> rows = batch.tensors[0].to_float();
        const std::vector<std::int32_t> ids = batch.tensors[1].to_int();
        for (std::size_t r = 0; r < batch.indices.size(); ++r) {
            CHECK(ids[r] == labels[batch.indices[r]]);
            for (std::size_t j = 0; j < 3; ++j) CHECK(rows[r * 3 + j] == features[batch.indices[r] * 3 + j]);
        }
    }
    // Resume from the start: the same batches.
    loader.restore(start);
    CHECK(loader.next().indices == batches[0].indices);

    // Batches to another device, in the columns' dtype.
    const Tensor ids_only = cpu.upload({10}, std::span<const std::int32_t>(labels));
    DataLoader to_reference({ids_only}, {.batch_size = 5, .shuffle = false}, Device::reference());
    const DataBatch batch = to_reference.next();
    CHECK(batch.tensors[0].device() == Device::reference());
    CHECK(batch.tensors[0].to_int() == std::vector<std::int32_t>{100, 101, 102, 103, 104});
    CHECK_THROWS_AS(DataLoader({x, ids_only.reshape({2, 5})}, {}), DataError);
    CHECK_THROWS_AS(DataLoader({}, {}), DataError);
}

TEST_CASE("TextDataset uploads i32 [B][T] batches; prefetching changes nothing") {
    std::string text;
    for (int i = 0; i < 400; ++i) text += char('a' + (i * 7 + i / 13) % 5);
    const Device cpu = Device::cpu({.threads = 1});
    TextDatasetOptions options{.context = 6, .batch_size = 3, .validation_fraction = 0.25, .seed = 4};
    TextDataset plain(text, options);
    options.prefetch = true;
    TextDataset prefetching(text, options);
    for (int step = 0; step < 5; ++step) {
        const Split split = step % 2 == 0 ? Split::train : Split::validation;
        const DeviceTokenBatch a = plain.next_batch(split, cpu);
        const DeviceTokenBatch b = prefetching.next_batch(split, cpu);
        CHECK(a.inputs.dtype() == DType::i32);
        CHECK(a.inputs.shape() == Shape{3, 6});
        CHECK(a.targets.shape() == Shape{3, 6});
        CHECK(a.inputs.to_int() == b.inputs.to_int());
        CHECK(a.targets.to_int() == b.targets.to_int());
    }
    CHECK(plain.state() == prefetching.state());
    // The uploaded batch is batch_at of the counter.
    TextDataset again(text, {.context = 6, .batch_size = 3, .validation_fraction = 0.25, .seed = 4});
    const TokenBatch host = again.batch_at(Split::train, 0);
    const DeviceTokenBatch first = again.next_batch(Split::train, Device::reference());
    CHECK(first.inputs.to_int() == host.inputs);
    CHECK(first.targets.to_int() == host.targets);
}
