// fuzz_bench_inputs: the reader of `tapevm bench --write-inputs` files (bench/inputs_file.hpp,
// parse_inputs_file). The layout has no checksum.
//
// Properties checked, each a finding when broken:
//   - the reader throws tapevm::Error and nothing else;
//   - every array has the length its counts give;
//   - the fields, laid out again as the header of inputs_file.hpp describes, give back
//     exactly the bytes that were read (so each field is read from its own place).
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "inputs_file.hpp"
#include "tapevm/error.hpp"

namespace {

using tapevm::fuzz::require;

class Image {
public:
    template <class T> void value(T v) { raw(&v, sizeof v); }
    template <class T> void values(const std::vector<T>& v) { raw(v.data(), v.size() * sizeof(T)); }
    void raw(const void* data, std::size_t size) {
        const auto* first = static_cast<const std::byte*>(data);
        if (size > 0) bytes.insert(bytes.end(), first, first + size);
    }
    std::vector<std::byte> bytes;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto bytes = tapevm::fuzz::bytes_of(data, size);
    tapevm::bench::InputsFile file;
    try {
        file = tapevm::bench::parse_inputs_file(bytes);
    } catch (const tapevm::Error&) {
        return 0;
    }
    require(file.inputs.size() == file.points * file.n_inputs, "inputs are points x n_inputs");
    require(file.params.size() == file.points * file.n_params, "params are points x n_params");
    require(file.reference.size() == file.sample.size() * file.width, "reference values are sample x width");
    require(file.workload.size() < 16, "the workload name leaves room for its NUL");

    Image image;
    image.raw("TVBENCH1", 8);
    char name[16] = {};
    std::memcpy(name, file.workload.data(), file.workload.size());
    image.raw(name, sizeof name);
    image.value(static_cast<std::uint32_t>(file.mode));
    for (const std::uint32_t count : {file.n_inputs, file.n_params, file.n_outputs, file.instructions})
        image.value(count);
    image.value(file.points);
    image.value(std::uint64_t{file.constants.size()});
    image.values(file.constants);
    image.values(file.inputs);
    image.values(file.params);
    image.value(std::uint64_t{file.sample.size()});
    image.values(file.sample);
    image.value(file.width);
    image.values(file.reference);
    require(image.bytes.size() == bytes.size() &&
                std::memcmp(image.bytes.data(), bytes.data(), bytes.size()) == 0,
            "the fields laid out again give the bytes read");
    return 0;
}
