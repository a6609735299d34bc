//! The host side: an adapter and its device, the kernels compiled once,
//! and a run of each: buffers up, a dispatch, the result back.

use ndarray::{Array1, ArrayRef2};
use wgpu::util::DeviceExt;

use super::{check, padded, unpadded, FlashOutput, Mask, Sizes};
use crate::error::AttnError;

/// The queries a workgroup of the flash kernel takes (`BR` in the WGSL).
const BR: usize = 64;

/// A GPU (or a software one) with the attention kernels built for it.
#[derive(Debug)]
pub struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: String,
    flash: wgpu::ComputePipeline,
    scores: wgpu::ComputePipeline,
    softmax: wgpu::ComputePipeline,
    weighted: wgpu::ComputePipeline,
}

/// An error of the GPU's set-up or of a run.
fn gpu_error(stage: &'static str, reason: impl ToString) -> AttnError {
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
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("attention"),
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| gpu_error("opening the device", e))?;
        let module = |label, source: &str| {
            device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            })
        };
        let flash =
            module("flash.wgsl", concat!(include_str!("common.wgsl"), include_str!("flash.wgsl")));
        let plain =
            module("plain.wgsl", concat!(include_str!("common.wgsl"), include_str!("plain.wgsl")));
        let layout = layout(&device);
        let pipeline = |module: &wgpu::ShaderModule, entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout),
                module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        Ok(Gpu {
            flash: pipeline(&flash, "forward"),
            scores: pipeline(&plain, "scores"),
            softmax: pipeline(&plain, "softmax_rows"),
            weighted: pipeline(&plain, "weighted_values"),
            device,
            queue,
            adapter: name,
        })
    }

    /// The adapter's name, backend and driver, as `wgpu` reports them.
    pub fn adapter(&self) -> &str {
        &self.adapter
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
        check(q, k, v, mask)?;
        if let Mask::Keep(_) = mask {
            self.check_fits("the GPU's mask (n × m words)", q.nrows(), k.nrows())?;
        }
        self.guarded(|| {
            let run = Run::new(self, (q, k, v), mask);
            let lse = run.storage((q.nrows() * 4) as u64);
            run.dispatch(&self.flash, &lse, [q.nrows().div_ceil(BR) as u32, 1, 1]);
            let output = run.output()?;
            let lse = Array1::from(run.read_floats(&lse)?);
            Ok(FlashOutput { output, lse })
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
    ) -> Result<ndarray::Array2<f32>, AttnError> {
        check(q, k, v, mask)?;
        let (n, m) = (q.nrows(), k.nrows());
        self.check_fits("the GPU's scores QKᵀ (n × m floats)", n, m)?;
        self.guarded(|| {
            let run = Run::new(self, (q, k, v), mask);
            let p = run.storage((n * m * 4) as u64);
            run.dispatch(&self.scores, &p, [m.div_ceil(8) as u32, n.div_ceil(8) as u32, 1]);
            run.dispatch(&self.softmax, &p, [n as u32, 1, 1]);
            let threads = n * run.d4;
            run.dispatch(&self.weighted, &p, [threads.div_ceil(64) as u32, 1, 1]);
            run.output()
        })
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

/// The buffers every kernel is given, as WGSL binds them: the sizes
/// (uniform), Q, K, V (read), the output and one more buffer (written),
/// and the mask (read).
fn layout(device: &wgpu::Device) -> wgpu::PipelineLayout {
    let entry = |binding: u32| {
        let ty = match binding {
            0 => wgpu::BufferBindingType::Uniform,
            1..=3 | 6 => wgpu::BufferBindingType::Storage { read_only: true },
            _ => wgpu::BufferBindingType::Storage { read_only: false },
        };
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        }
    };
    let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..7).map(entry).collect();
    let bind = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &entries,
    });
    device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&bind)],
        ..Default::default()
    })
}

/// One call's buffers: the sizes, Q, K, V and the output.
struct Run<'a> {
    gpu: &'a Gpu,
    sizes: wgpu::Buffer,
    q: wgpu::Buffer,
    k: wgpu::Buffer,
    v: wgpu::Buffer,
    o: wgpu::Buffer,
    keep: wgpu::Buffer,
    n: usize,
    d: usize,
    d4: usize,
}

impl<'a> Run<'a> {
    fn new(
        gpu: &'a Gpu,
        (q, k, v): (&ArrayRef2<f32>, &ArrayRef2<f32>, &ArrayRef2<f32>),
        mask: Mask,
    ) -> Self {
        let (n, m, d) = (q.nrows(), k.nrows(), q.ncols());
        let d4 = d.div_ceil(4);
        let sizes = Sizes {
            n: n as u32,
            m: m as u32,
            d4: d4 as u32,
            mask: mask.kind(),
            scale: 1.0 / (d as f32).sqrt(),
            _pad: [0; 3],
        };
        let upload = |label, contents: &[u8], usage| {
            gpu.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let storage = wgpu::BufferUsages::STORAGE;
        let keep: Vec<u8> = match mask {
            Mask::Keep(keep) => keep.iter().flat_map(|&x| u32::from(x).to_le_bytes()).collect(),
            _ => vec![0; 4], // unread, but every binding needs a buffer
        };
        Run {
            keep: upload("keep", &keep, storage),
            gpu,
            sizes: upload("sizes", &sizes.bytes(), wgpu::BufferUsages::UNIFORM),
            q: upload("Q", &padded(q, d4), storage),
            k: upload("K", &padded(k, d4), storage),
            v: upload("V", &padded(v, d4), storage),
            o: gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("O"),
                size: (n * d4 * 16) as u64,
                usage: storage | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            n,
            d,
            d4,
        }
    }

    /// A storage buffer of `size` bytes that can be read back.
    fn storage(&self, size: u64) -> wgpu::Buffer {
        self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    /// Submits `pipeline` over `groups` workgroups with the call's buffers
    /// and `extra` (binding 5); the device runs the submissions in order.
    fn dispatch(&self, pipeline: &wgpu::ComputePipeline, extra: &wgpu::Buffer, groups: [u32; 3]) {
        let device = &self.gpu.device;
        let buffers = [&self.sizes, &self.q, &self.k, &self.v, &self.o, extra, &self.keep];
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
        }
        self.gpu.queue.submit([encoder.finish()]);
    }

    /// The bytes of `buffer`, copied to one the CPU can map.
    fn read(&self, buffer: &wgpu::Buffer) -> Result<Vec<u8>, AttnError> {
        let device = &self.gpu.device;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read back"),
            size: buffer.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, buffer.size());
        self.gpu.queue.submit([encoder.finish()]);
        let slice = staging.slice(..);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| gpu_error("waiting for the GPU", e))?;
        receiver
            .recv()
            .map_err(|e| gpu_error("reading back", e))?
            .map_err(|e| gpu_error("reading back", e))?;
        let bytes = slice.get_mapped_range().map_err(|e| gpu_error("reading back", e))?.to_vec();
        staging.unmap();
        Ok(bytes)
    }

    fn read_floats(&self, buffer: &wgpu::Buffer) -> Result<Vec<f32>, AttnError> {
        let bytes = self.read(buffer)?;
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// The output, `n × d`; an error if an entry is not finite.
    fn output(&self) -> Result<ndarray::Array2<f32>, AttnError> {
        let o = unpadded(&self.read_floats(&self.o)?, self.n, self.d4, self.d);
        if let Some(((i, j), &value)) = o.indexed_iter().find(|(_, x)| !x.is_finite()) {
            return Err(AttnError::Overflow { what: "the GPU's output", position: (i, j), value });
        }
        Ok(o)
    }
}
