#include "glsl_compiler.hpp"

#include <future>
#include <mutex>
#include <string>

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include "embedded_glsl.hpp"
#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {

namespace {

// `#include "name"` from the embedded files only.
class EmbeddedIncluder final : public glslang::TShader::Includer {
public:
    IncludeResult* includeLocal(const char* name, const char*, size_t) override { return find(name); }
    IncludeResult* includeSystem(const char* name, const char*, size_t) override { return find(name); }
    void releaseInclude(IncludeResult* result) override { delete result; }

private:
    static IncludeResult* find(const char* name) {
        const auto text = embedded_glsl(name);
        if (!text) return nullptr;
        return new IncludeResult(name, text->data(), text->size(), nullptr);
    }
};

void initialize_once() {
    static std::once_flag once;
    std::call_once(once, [] { glslang::InitializeProcess(); });
}

}  // namespace

std::optional<std::string_view> embedded_glsl(std::string_view name) {
    for (const EmbeddedFile& file : embedded_glsl_files)
        if (file.name == name) return file.text;
    return std::nullopt;
}

std::vector<std::uint32_t> compile_glsl(std::string_view source) {
    initialize_once();
    glslang::TShader shader(EShLangCompute);
    const char* text = source.data();
    const int length = static_cast<int>(source.size());
    const char* name = "compiled kernel";
    shader.setStringsWithLengthsAndNames(&text, &length, &name, 1);
    shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
    shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
    shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
    const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
    EmbeddedIncluder includer;
    if (!shader.parse(GetDefaultResources(), 450, false, messages, includer))
        throw Error(std::string("gpu: the generated kernel does not compile: ") + shader.getInfoLog());
    glslang::TProgram program;
    program.addShader(&shader);
    if (!program.link(messages))
        throw Error(std::string("gpu: the generated kernel does not link: ") + program.getInfoLog());
    std::vector<std::uint32_t> spirv;
    glslang::SpvOptions options;
    options.generateDebugInfo = false;
    // No OpName/OpLine: a smaller module (mlp16's gradient: 982 -> 726 KB) for the disk cache to
    // read and check and for the driver to hash on every pipeline made from its cache.
    options.stripDebugInfo = true;
    options.disableOptimizer = true;  // the driver optimises; glslang's optimizer costs compile time
    options.validate = false;
    glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &options);
    if (spirv.empty()) throw Error("gpu: glslang produced no SPIR-V for the generated kernel");
    return spirv;
}

void warm_up_glsl_compiler() noexcept {
    // The same stage, version and targets as every kernel's, so glslang keeps the tables it
    // builds. A future from std::async waits in its destructor at exit, so the thread never
    // outlives glslang's statics.
    try {
        static const std::future<void> warming = std::async(std::launch::async, [] {
            try {
                compile_glsl("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n");
            } catch (...) {  // a real compile reports glslang's trouble
            }
        });
    } catch (...) {  // no thread to be had: the first compile sets glslang up itself
    }
}

}  // namespace tapevm::gpu::detail
