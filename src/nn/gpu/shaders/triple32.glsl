// triple32: Chris Wellons' low-bias 32-bit integer hash (hash-prospector), dropout's mask
// (src/nn/dropout_mask.hpp). One body for C++ and GLSL: the includer defines
// NN_TRIPLE32_SIGNATURE first (C++: constexpr std::uint32_t triple32(std::uint32_t v); GLSL:
// uint triple32(uint v)).
NN_TRIPLE32_SIGNATURE {
    v ^= v >> 17;
    v *= 0xed5ad4bbu;
    v ^= v >> 11;
    v *= 0xac4c1b51u;
    v ^= v >> 15;
    v *= 0x31848babu;
    v ^= v >> 14;
    return v;
}
