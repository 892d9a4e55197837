// fuzz_safetensors: the safetensors parser (src/nn/io/tapevm/nn/safetensors.hpp,
// parse_safetensors, a pure function over the file's bytes). The format has no checksum.
//
// Properties checked, each a finding when broken:
//   - the parser throws SafetensorsError and nothing else;
//   - an accepted header keeps the format's rules: data_offset = 8 + the header's length,
//     each tensor's byte count = elements x element size, the tensors (in offset order) tile
//     the data section exactly, dtype and element size match the dtype's name;
//   - when every tensor has a tapevm dtype and a name, encode_safetensors() of the tensors
//     and metadata gives a file that parses to the same names, dtypes, shapes, bytes and
//     metadata.
#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "fuzz_support.hpp"
#include "tapevm/nn/safetensors.hpp"

namespace {

using tapevm::fuzz::require;
namespace nn = tapevm::nn;

std::uint64_t elements(const nn::Shape& shape) {
    std::uint64_t count = 1;
    for (const std::size_t extent : shape) count *= extent;  // the parser has checked for overflow
    return count;
}

void check_header(const nn::SafetensorsHeader& header, std::span<const std::byte> file) {
    std::uint64_t length = 0;
    for (std::size_t k = 0; k < 8; ++k)
        length |= std::uint64_t(std::to_integer<unsigned>(file[k])) << (8 * k);
    require(header.data_offset == 8 + length, "data_offset is 8 + the header's length");
    std::uint64_t covered = 0;
    for (const nn::SafetensorsEntry& entry : header.entries) {
        require(entry.begin == covered && entry.begin <= entry.end, "tensors tile the data section in order");
        require(entry.end - entry.begin == elements(entry.shape) * entry.element_size,
                "a tensor holds elements x element size bytes");
        require(entry.dtype == nn::dtype_from_safetensors_name(entry.dtype_name), "dtype matches its name");
        if (entry.dtype)
            require(entry.element_size == nn::dtype_size(*entry.dtype), "element size matches the dtype");
        covered = entry.end;
    }
    require(header.data_offset + covered == file.size(), "the tensors end where the file ends");
}

void check_round_trip(const nn::SafetensorsHeader& header, std::span<const std::byte> file) {
    std::vector<nn::SafetensorsTensorBytes> tensors;
    for (const nn::SafetensorsEntry& entry : header.entries) {
        if (!entry.dtype || entry.name.empty()) return;  // nothing the encoder can write
        tensors.push_back({entry.name, *entry.dtype, entry.shape,
                           file.subspan(static_cast<std::size_t>(header.data_offset + entry.begin),
                                        static_cast<std::size_t>(entry.end - entry.begin))});
    }
    const std::vector<std::byte> encoded = nn::encode_safetensors(tensors, header.metadata);
    const nn::SafetensorsHeader again = nn::parse_safetensors(encoded, "encoded");
    require(again.metadata == header.metadata, "metadata round-trips");
    require(again.entries.size() == header.entries.size(), "every tensor round-trips");
    std::map<std::string, const nn::SafetensorsEntry*> by_name;
    for (const nn::SafetensorsEntry& entry : again.entries) by_name[entry.name] = &entry;
    for (const nn::SafetensorsTensorBytes& tensor : tensors) {
        const auto found = by_name.find(tensor.name);
        require(found != by_name.end(), "a tensor keeps its name");
        const nn::SafetensorsEntry& entry = *found->second;
        require(entry.dtype == tensor.dtype && entry.shape == tensor.shape, "a tensor keeps dtype and shape");
        require(entry.end - entry.begin == tensor.data.size() &&
                    (tensor.data.empty() || std::memcmp(encoded.data() + again.data_offset + entry.begin,
                                                        tensor.data.data(), tensor.data.size()) == 0),
                "a tensor keeps its bytes");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto file = tapevm::fuzz::bytes_of(data, size);
    nn::SafetensorsHeader header;
    try {
        header = nn::parse_safetensors(file, "fuzz.safetensors");
    } catch (const nn::SafetensorsError&) {
        return 0;
    }
    check_header(header, file);
    check_round_trip(header, file);
    return 0;
}
