/* SPDX-License-Identifier: Apache-2.0 */
// cxx_client.cc - a C++ client that uses the runtime API the way
// InfiniCore's C++ layer does, compiled against this project's headers:
//  - one Runtime object per device, each owning a stream made with
//    infinirtStreamCreate (a blocking stream);
//  - device memory from a stream-ordered pool (MallocAsync / FreeAsync on
//    the runtime's stream) and pinned staging memory (MallocHost);
//  - an asynchronous H2D copy on the runtime's stream followed by a
//    "kernel" on that stream (a host function: the one kind of work every
//    backend can run), then a SYNCHRONOUS D2H copy with no stream
//    synchronize in between - InfiniCore relies on the legacy default
//    stream ordering that copy after the kernel;
//  - on an inline CPU backend, additionally the way InfiniCore's CPU
//    operators work: the kernel runs on the caller's thread right after
//    the "async" copy returns;
//  - events around the work and their elapsed time;
//  - switching devices back and forth.
// Usage: compat-cxx-client TYPE [inline]   (TYPE: cpu or opencl)
#include <infinirt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace
{

void check(infiniStatus_t st, const char *what)
{
    if (st != INFINI_STATUS_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed: " + infinirtGetErrorName(st));
}
#define RT(call) check((call), #call)

struct Device {
    infiniDevice_t type;
    int id;
};

// Work a "kernel" does: out[i] = in[i] * 3 + id.
struct KernelArgs {
    const int *in;
    int *out;
    size_t n;
    int id;
    int delay_ms;
};

void kernel(void *p)
{
    auto *a = static_cast<KernelArgs *>(p);
    // Slow enough that a copy not ordered after the kernel reads the
    // buffer before it is written.
    std::this_thread::sleep_for(std::chrono::milliseconds(a->delay_ms));
    for (size_t i = 0; i < a->n; i++)
        a->out[i] = a->in[i] * 3 + a->id;
}

class Runtime
{
  public:
    explicit Runtime(Device d) : device_(d)
    {
        activate();
        RT(infinirtStreamCreate(&stream_));
    }
    ~Runtime()
    {
        activate();
        infinirtStreamSynchronize(stream_);
        infinirtStreamDestroy(stream_);
    }
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;

    void activate() const
    {
        RT(infinirtSetDevice(device_.type, device_.id));
    }
    infinirtStream_t stream() const
    {
        return stream_;
    }
    Device device() const
    {
        return device_;
    }

    // Stream-ordered memory, as InfiniCore's pinnable block allocator uses.
    std::shared_ptr<void> allocate(size_t bytes)
    {
        void *p = nullptr;
        RT(infinirtMallocAsync(&p, bytes, stream_));
        infinirtStream_t s = stream_;
        return std::shared_ptr<void>(p, [s](void *q) { check(infinirtFreeAsync(q, s), "infinirtFreeAsync"); });
    }
    std::shared_ptr<void> allocate_host(size_t bytes)
    {
        void *p = nullptr;
        RT(infinirtMallocHost(&p, bytes));
        return std::shared_ptr<void>(p, [](void *q) { check(infinirtFreeHost(q), "infinirtFreeHost"); });
    }

  private:
    Device device_;
    infinirtStream_t stream_ = nullptr;
};

int run_device(Runtime &rt, bool inline_backend, int round)
{
    rt.activate();
    infiniDevice_t cur_type;
    int cur_id;
    RT(infinirtGetDevice(&cur_type, &cur_id));
    if (cur_type != rt.device().type || cur_id != rt.device().id) {
        std::fprintf(stderr, "GetDevice does not give the device just set\n");
        return 1;
    }
    const size_t n = 1 << 16;
    const size_t bytes = n * sizeof(int);
    auto staging = rt.allocate_host(bytes);
    auto in = rt.allocate(bytes);
    auto out = rt.allocate(bytes);
    int *host_in = static_cast<int *>(staging.get());
    for (size_t i = 0; i < n; i++)
        host_in[i] = static_cast<int>(i) + round;

    infinirtEvent_t start, end;
    RT(infinirtEventCreate(&start));
    RT(infinirtEventCreate(&end));
    RT(infinirtEventRecord(start, rt.stream()));
    RT(infinirtMemcpyAsync(in.get(), host_in, bytes, INFINIRT_MEMCPY_H2D, rt.stream()));
    KernelArgs args{static_cast<const int *>(in.get()), static_cast<int *>(out.get()), n, rt.device().id, 0};
    if (inline_backend && rt.device().type == INFINI_DEVICE_CPU)
        kernel(&args); // InfiniCore's CPU operators: on the caller's thread, now
    else {
        args.delay_ms = 20;
        RT(infinirtLaunchHostFunc(rt.stream(), kernel, &args));
    }
    RT(infinirtEventRecord(end, rt.stream()));
    // The synchronous copy is ordered after the kernel on the blocking
    // stream: no synchronize before it.
    std::vector<int> result(n);
    RT(infinirtMemcpy(result.data(), out.get(), bytes, INFINIRT_MEMCPY_D2H));
    for (size_t i = 0; i < n; i++) {
        int want = (static_cast<int>(i) + round) * 3 + rt.device().id;
        if (result[i] != want) {
            std::fprintf(stderr, "device %d round %d: element %zu is %d, want %d\n", rt.device().id, round, i,
                         result[i], want);
            infinirtStreamSynchronize(rt.stream()); // args lives on this frame
            return 1;
        }
    }
    RT(infinirtEventSynchronize(end));
    float ms = -1;
    RT(infinirtEventElapsedTime(&ms, start, end));
    if (!(ms >= 0)) {
        std::fprintf(stderr, "elapsed time %f\n", ms);
        return 1;
    }
    RT(infinirtEventDestroy(start));
    RT(infinirtEventDestroy(end));
    // staging, in and out go back here: FreeAsync on the stream, FreeHost.
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s cpu|opencl [inline]\n", argv[0]);
        return 2;
    }
    infiniDevice_t type = std::strcmp(argv[1], "opencl") == 0 ? INFINI_DEVICE_OPENCL : INFINI_DEVICE_CPU;
    bool inline_backend = argc > 2 && std::strcmp(argv[2], "inline") == 0;
    try {
        RT(infinirtInit());
        int count = 0;
        RT(infinirtGetDeviceCount(type, &count));
        if (count == 0) {
            std::printf("no %s device: skipped\n", argv[1]);
            return 77;
        }
        std::vector<std::unique_ptr<Runtime>> runtimes;
        for (int i = 0; i < count && i < 2; i++)
            runtimes.emplace_back(new Runtime(Device{type, i}));
        for (int round = 0; round < 4; round++)
            for (auto &rt : runtimes) // switching devices every time
                if (run_device(*rt, inline_backend, round) != 0)
                    return 1;
        runtimes.clear();
        std::printf("cxx client: ok on %d %s device(s)\n", count < 2 ? count : 2, argv[1]);
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "cxx client: %s\n", e.what());
        return 1;
    }
}
