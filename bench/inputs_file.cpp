#include "inputs_file.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

#include "check.hpp"
#include "mlp.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::bench {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the inputs file is written as the host lays it out");

class Writer {
public:
    explicit Writer(const std::string& path) : path_(path), out_(path, std::ios::binary) {
        if (!out_) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    }
    template <class T> void value(T v) { out_.write(reinterpret_cast<const char*>(&v), sizeof v); }
    template <class T> void values(const std::vector<T>& v) {
        out_.write(reinterpret_cast<const char*>(v.data()),
                   static_cast<std::streamsize>(v.size() * sizeof(T)));
    }
    void bytes(const char* data, std::size_t size) { out_.write(data, static_cast<std::streamsize>(size)); }
    void finish() {
        out_.close();
        if (!out_) throw Error("cannot write '" + path_ + "'");
    }

private:
    std::string path_;
    std::ofstream out_;
};

std::vector<double> constants_of(const Workload& workload) {
    if (workload.mlp == nullptr) return {};
    const MlpModel& model = *workload.mlp;
    std::vector<double> all;
    for (const auto* part :
         {&model.weights1, &model.biases1, &model.weights2, &model.biases2, &model.weights3})
        all.insert(all.end(), part->begin(), part->end());
    all.push_back(model.bias3);
    return all;
}

}  // namespace

void write_inputs_file(const std::string& path, const Workload& workload, Mode mode, std::size_t points) {
    if (!workload.supports(mode))
        throw Error("--write-inputs: " + std::string(workload.name) + " has no " +
                    std::string(mode_name(mode)) + " mode");
    const Tape& tape = workload.tape;
    const Points data = workload.make_points(points);
    const std::vector<std::size_t> sample = sample_points(std::min<std::size_t>(points, 65536), 64);

    std::vector<double> inputs, params;
    for (const std::size_t point : sample) {
        const auto row = [&](const std::vector<double>& from, std::size_t width, std::vector<double>& to) {
            to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(point * width),
                      from.begin() + static_cast<std::ptrdiff_t>((point + 1) * width));
        };
        row(data.inputs, tape.input_count(), inputs);
        row(data.params, tape.param_count(), params);
    }
    const reference::Vm vm(tape);
    const Batch<double> batch{sample.size(), inputs, params};
    std::vector<double> reference;
    switch (mode) {
        case Mode::forward: reference = vm.forward(batch).values; break;
        case Mode::gradient: reference = vm.gradient(batch).values; break;
        case Mode::jacobian: reference = vm.jacobian(batch).values; break;
    }

    Writer out(path);
    out.bytes("TVBENCH1", 8);
    char name[16] = {};
    std::copy_n(workload.name.data(), std::min<std::size_t>(workload.name.size(), 15), name);
    out.bytes(name, sizeof name);
    out.value<std::uint32_t>(static_cast<std::uint32_t>(mode));
    out.value<std::uint32_t>(tape.input_count());
    out.value<std::uint32_t>(tape.param_count());
    out.value<std::uint32_t>(tape.output_count());
    out.value<std::uint32_t>(tape.instruction_count());
    out.value<std::uint64_t>(points);
    const std::vector<double> constants = constants_of(workload);
    out.value<std::uint64_t>(constants.size());
    out.values(constants);
    out.values(data.inputs);
    out.values(data.params);
    out.value<std::uint64_t>(sample.size());
    out.values(std::vector<std::uint64_t>(sample.begin(), sample.end()));
    out.value<std::uint64_t>(result_width(tape, mode));
    out.values(reference);
    out.finish();
}

}  // namespace tapevm::bench
