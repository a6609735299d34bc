//! The host side: an adapter and its device, the kernels compiled once,
//! and a call of each: buffers up, its dispatches, the result back.

use ndarray::{Array1, Array2, ArrayRef2, Axis};
use wgpu::util::DeviceExt;

use super::run::{spans, Run, SPAN};
use super::{check, check_backward, FlashOutput, Mask};
use crate::error::AttnError;
use crate::fast::Gradients;

/// The queries (or keys) a workgroup of the flash kernels takes (`BR` in
/// the WGSL).
const BR: usize = 64;

/// A GPU (or a software one) with the attention kernels built for it.
#[derive(Debug)]
pub struct Gpu {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    adapter: String,
    software: bool,
    kernels: Kernels,
    /// Whether the device writes timestamps, and the GPU's own time of the
    /// last call's kernels, in seconds.
    pub(super) timestamps: bool,
    pub(super) seconds: std::sync::Mutex<Option<f64>>,
}

/// The compiled kernels, by their WGSL names.
#[derive(Debug)]
struct Kernels {
    forward: wgpu::ComputePipeline,
    rows: wgpu::ComputePipeline,
    queries: wgpu::ComputePipeline,
    keys: wgpu::ComputePipeline,
    scores: wgpu::ComputePipeline,
    softmax_rows: wgpu::ComputePipeline,
    weighted_values: wgpu::ComputePipeline,
}

/// An error of the GPU's set-up or of a run.
pub(super) fn gpu_error(stage: &'static str, reason: impl ToString) -> AttnError {
    AttnError::Gpu { stage, reason: reason.to_string() }
}

impl Gpu {
    /// The first adapter `wgpu` finds (a real GPU before a software one),
    /// its device, and the kernels compiled. An error says what to install
    /// when there is none.
    pub fn new() -> Result<Gpu, AttnError> {
        pollster::block_on(Self::open())
    }

    async fn open() -> Result<Gpu, AttnError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| {
                gpu_error(
                    "finding an adapter",
                    format!(
                        "{e}: no GPU or software Vulkan device was found; on Debian, \
                         `apt install mesa-vulkan-drivers` provides lavapipe"
                    ),
                )
            })?;
        let info = adapter.get_info();
        let name = format!("{} ({:?}, {})", info.name, info.backend, info.driver);
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("attention"),
                required_features: adapter.features() & wgpu::Features::TIMESTAMP_QUERY,
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| gpu_error("opening the device", e))?;
        let kernels = Kernels::new(&device);
        Ok(Gpu {
            device,
            queue,
            adapter: name,
            software: info.device_type == wgpu::DeviceType::Cpu,
            kernels,
            timestamps,
            seconds: std::sync::Mutex::new(None),
        })
    }

    /// The adapter's name, backend and driver, as `wgpu` reports them.
    pub fn adapter(&self) -> &str {
        &self.adapter
    }

    /// Whether the adapter is a GPU simulated on the processor (lavapipe,
    /// SwiftShader), whose times say nothing about a GPU's.
    pub fn is_software(&self) -> bool {
        self.software
    }

    /// The time the last call's kernels took on the device, in seconds, by
    /// its timestamps (the copies to and from it left out); `None` where
    /// the device writes no timestamps, or where the call dispatched more
    /// kernels than it can time (a span of a few keys).
    pub fn last_kernel_seconds(&self) -> Option<f64> {
        *self.seconds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `softmax(QKᵀ/√d_k) V` by FlashAttention-2's forward kernel, with
    /// each query's log-sum-exp. `d_v = d_k ≤ 64`.
    pub fn flash_attention(
        &self,
        q: &ArrayRef2<f32>,
        k: &ArrayRef2<f32>,
        v: &ArrayRef2<f32>,
        mask: Mask,
    ) -> Result<FlashOutput, AttnError> {
        self.flash_attention_in_spans([q, k, v], mask, SPAN)
    }

    // ANCHOR: host
    /// [`Gpu::flash_attention`], each dispatch walking at most `span` keys
    /// (at least 1); [`Gpu::flash_attention`] walks [`SPAN`].
    pub fn flash_attention_in_spans(
        &self,
        [q, k, v]: [&ArrayRef2<f32>; 3],
        mask: Mask,
        span: usize,
    ) -> Result<FlashOutput, AttnError> {
        check(q, k, v, mask)?;
        self.check_mask(mask, q.nrows(), k.nrows())?;
        if span == 0 {
            return Err(AttnError::InvalidArgument {
                name: "keys a dispatch walks (span)",
                value: 0.0,
                requirement: "must be at least 1",
            });
        }
        self.guarded(|| {
            let run = Run::new(self, (q, k, v), mask);
            let lse = run.storage((q.nrows() * 4) as u64);
            let buffers =
                [(1, &run.q), (2, &run.k), (3, &run.v), (4, &run.o), (5, &lse), (6, &run.keep)];
            let groups = [q.nrows().div_ceil(BR) as u32, 1, 1];
            for span in spans(k.nrows(), span) {
                run.dispatch(&self.kernels.forward, &buffers, span, groups);
            }
            let output = run.output()?;
            let lse = Array1::from(run.read_floats(&lse)?);
            run.record_seconds()?;
            Ok(FlashOutput { output, lse, mask: mask.fingerprint() })
        })
    }
    // ANCHOR_END: host

    /// The gradients `(dQ, dK, dV)` of [`Gpu::flash_attention`]'s output,
    /// given `dO`, by FlashAttention-2's backward kernels, from what the
    /// forward pass returned. `mask` must be the forward pass's (another
    /// is an error).
    pub fn flash_attention_backward(
        &self,
        [q, k, v]: [&ArrayRef2<f32>; 3],
        forward: &FlashOutput,
        d_out: &ArrayRef2<f32>,
        mask: Mask,
    ) -> Result<Gradients, AttnError> {
        check(q, k, v, mask)?;
        check_backward(q, forward, d_out, mask)?;
        self.check_mask(mask, q.nrows(), k.nrows())?;
        let (n, m) = (q.nrows(), k.nrows());
        self.guarded(|| {
            let mut run = Run::new(self, (q, k, v), mask);
            run.o = self.upload("O", &super::padded(&forward.output, run.d4));
            let lse = self.upload("lse", &bytes(forward.lse.iter()));
            let d_o = self.upload("dO", &super::padded(d_out, run.d4));
            let d_rows = run.storage((n * 4) as u64);
            let dq = run.storage((n * run.d4 * 16) as u64);
            let dkv = run.storage((2 * m * run.d4 * 16) as u64);
            let rows = [(4, &run.o), (7, &d_o), (8, &d_rows)];
            run.dispatch(&self.kernels.rows, &rows, 0..m, [n.div_ceil(64) as u32, 1, 1]);
            let shared = [
                (1, &run.q),
                (2, &run.k),
                (3, &run.v),
                (5, &lse),
                (6, &run.keep),
                (7, &d_o),
                (8, &d_rows),
            ];
            let with = |extra| shared.iter().copied().chain([extra]).collect::<Vec<_>>();
            for span in spans(m, SPAN) {
                let groups = [n.div_ceil(BR) as u32, 1, 1];
                run.dispatch(&self.kernels.queries, &with((9, &dq)), span, groups);
            }
            for span in spans(n, SPAN) {
                let groups = [m.div_ceil(BR) as u32, 1, 1];
                run.dispatch(&self.kernels.keys, &with((10, &dkv)), span, groups);
            }
            let dq = run.matrix(&dq, n, "the GPU's dQ")?;
            let dkv = run.matrix(&dkv, 2 * m, "the GPU's dK and dV")?;
            let (dk, dv) = dkv.view().split_at(Axis(0), m);
            run.record_seconds()?;
            Ok((dq, dk.to_owned(), dv.to_owned()))
        })
    }

    /// `softmax(QKᵀ/√d_k) V` by the three plain kernels: scores, a softmax
    /// a row, weighted values. `d_v = d_k ≤ 64`.
    pub fn attention(
        &self,
        q: &ArrayRef2<f32>,
        k: &ArrayRef2<f32>,
        v: &ArrayRef2<f32>,
        mask: Mask,
    ) -> Result<Array2<f32>, AttnError> {
        check(q, k, v, mask)?;
        let (n, m) = (q.nrows(), k.nrows());
        self.check_fits("the GPU's scores QKᵀ (n × m floats)", n, m)?;
        self.guarded(|| {
            let run = Run::new(self, (q, k, v), mask);
            let p = run.storage((n * m * 4) as u64);
            let kernels = &self.kernels;
            let scores = [(1, &run.q), (2, &run.k), (5, &p), (6, &run.keep)];
            run.dispatch(
                &kernels.scores,
                &scores,
                0..m,
                [m.div_ceil(8) as u32, n.div_ceil(8) as u32, 1],
            );
            run.dispatch(&kernels.softmax_rows, &[(5, &p)], 0..m, [n as u32, 1, 1]);
            let threads = n * run.d4;
            let weighted = [(3, &run.v), (4, &run.o), (5, &p)];
            run.dispatch(
                &kernels.weighted_values,
                &weighted,
                0..m,
                [threads.div_ceil(64) as u32, 1, 1],
            );
            let output = run.output()?;
            run.record_seconds()?;
            Ok(output)
        })
    }

    /// A buffer holding `contents`, for the kernels to read.
    pub(super) fn upload(&self, label: &str, contents: &[u8]) -> wgpu::Buffer {
        self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage: wgpu::BufferUsages::STORAGE,
        })
    }

    /// Checks that a `Mask::Keep` fits one buffer (`n · m` words).
    fn check_mask(&self, mask: Mask, n: usize, m: usize) -> Result<(), AttnError> {
        match mask {
            Mask::Keep(_) => self.check_fits("the GPU's mask (n × m words)", n, m),
            _ => Ok(()),
        }
    }

    /// Checks that a buffer of `n · m` four-byte entries is no larger than
    /// the device binds, before anything is allocated.
    fn check_fits(&self, what: &'static str, n: usize, m: usize) -> Result<(), AttnError> {
        let limit = self.device.limits().max_storage_buffer_binding_size as usize / 4;
        crate::check::check_total(what, &[n, m], limit).map(|_| ())
    }

    /// Runs `work` with the device's errors (invalid use, memory run out)
    /// caught and returned, instead of `wgpu`'s default, a panic.
    fn guarded<T>(&self, work: impl FnOnce() -> Result<T, AttnError>) -> Result<T, AttnError> {
        let memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = work();
        let invalid = pollster::block_on(validation.pop());
        let out_of_memory = pollster::block_on(memory.pop());
        match out_of_memory.or(invalid) {
            Some(error) => Err(gpu_error("running the kernels", error)),
            None => result,
        }
    }
}

/// The little-endian bytes of `floats`.
fn bytes<'a>(floats: impl Iterator<Item = &'a f32>) -> Vec<u8> {
    floats.flat_map(|x| x.to_le_bytes()).collect()
}

impl Kernels {
    /// Compiles the WGSL, each kernel file after `common.wgsl`; each
    /// pipeline's bindings are those its kernel uses.
    fn new(device: &wgpu::Device) -> Kernels {
        let module = |label, source: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            })
        };
        let flash = module(
            "flash.wgsl",
            concat!(
                include_str!("common.wgsl"),
                include_str!("flash.wgsl"),
                include_str!("backward.wgsl")
            ),
        );
        let plain =
            module("plain.wgsl", concat!(include_str!("common.wgsl"), include_str!("plain.wgsl")));
        let pipeline = |module: &wgpu::ShaderModule, entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: None,
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Kernels {
            forward: pipeline(&flash, "forward"),
            rows: pipeline(&flash, "rows"),
            queries: pipeline(&flash, "queries"),
            keys: pipeline(&flash, "keys"),
            scores: pipeline(&plain, "scores"),
            softmax_rows: pipeline(&plain, "softmax_rows"),
            weighted_values: pipeline(&plain, "weighted_values"),
        }
    }
}
