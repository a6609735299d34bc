//! One call's buffers on the device, its dispatches, and reading back.

use std::ops::Range;

use ndarray::{Array2, ArrayRef2};
use wgpu::util::DeviceExt;

use super::device::{gpu_error, Gpu};
use super::{padded, unpadded, Mask, Sizes};
use crate::error::AttnError;

/// The most keys (or, in the dK, dV pass, queries) one dispatch of a flash
/// kernel walks: the next dispatch carries on from the sums it wrote. A
/// thread's loops then run a bounded number of times whatever n and m are,
/// which a software device needs (lavapipe cuts loops short, silently,
/// after 65,535 iterations), and a real GPU's watchdog, which ends a
/// dispatch that runs for seconds, is never near.
pub const SPAN: usize = 8_192;

/// `0..len` in spans of at most `span` (at least 1).
pub(super) fn spans(len: usize, span: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len).step_by(span).map(move |begin| begin..begin.saturating_add(span).min(len))
}

/// One call's buffers: the sizes, Q, K, V, the output and the mask.
pub(super) struct Run<'a> {
    gpu: &'a Gpu,
    sizes: Sizes,
    pub(super) q: wgpu::Buffer,
    pub(super) k: wgpu::Buffer,
    pub(super) v: wgpu::Buffer,
    pub(super) o: wgpu::Buffer,
    pub(super) keep: wgpu::Buffer,
    pub(super) d4: usize,
    n: usize,
    d: usize,
    /// Where the dispatches write their start and end times, if the device
    /// writes timestamps, and how many they have written.
    stamps: Option<wgpu::QuerySet>,
    written: std::cell::Cell<u32>,
    dispatched: std::cell::Cell<u32>,
}

/// The most dispatches a call times: the backward pass's at the most rows.
const MOST_DISPATCHES: u32 = 2 + 2 * (super::MAX_ROWS.div_ceil(SPAN) as u32);

impl<'a> Run<'a> {
    pub(super) fn new(
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
            span: (0, m as u32),
        };
        let keep: Vec<u8> = match mask {
            Mask::Keep(keep) => keep.iter().flat_map(|&x| u32::from(x).to_le_bytes()).collect(),
            _ => vec![0; 4], // unread, but every binding needs a buffer
        };
        let stamps = gpu.timestamps.then(|| {
            gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel times"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * MOST_DISPATCHES,
            })
        });
        *gpu.seconds.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Run {
            stamps,
            written: std::cell::Cell::new(0),
            dispatched: std::cell::Cell::new(0),
            keep: gpu.upload("keep", &keep),
            q: gpu.upload("Q", &padded(q, d4)),
            k: gpu.upload("K", &padded(k, d4)),
            v: gpu.upload("V", &padded(v, d4)),
            o: Self::empty(gpu, (n * d4 * 16) as u64),
            gpu,
            sizes,
            n,
            d,
            d4,
        }
    }

    fn empty(gpu: &Gpu, size: u64) -> wgpu::Buffer {
        gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    }

    /// A storage buffer of `size` bytes that can be read back.
    pub(super) fn storage(&self, size: u64) -> wgpu::Buffer {
        Self::empty(self.gpu, size)
    }

    /// Submits `kernel` over `groups` workgroups, with the sizes (binding
    /// 0, walking `span`) and `buffers` at their bindings; the device runs
    /// the submissions in order.
    pub(super) fn dispatch(
        &self,
        kernel: &wgpu::ComputePipeline,
        buffers: &[(u32, &wgpu::Buffer)],
        span: Range<usize>,
        groups: [u32; 3],
    ) {
        let device = &self.gpu.device;
        let sizes = Sizes { span: (span.start as u32, span.end as u32), ..self.sizes };
        let sizes = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sizes"),
            contents: &sizes.bytes(),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let entries: Vec<wgpu::BindGroupEntry> = [(0, &sizes)]
            .iter()
            .chain(buffers)
            .map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() })
            .collect();
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &kernel.get_bind_group_layout(0),
            entries: &entries,
        });
        let at = self.written.get();
        self.dispatched.set(self.dispatched.get().saturating_add(1));
        let timestamp_writes =
            self.stamps.as_ref().filter(|_| at < 2 * MOST_DISPATCHES).map(|set| {
                self.written.set(at + 2);
                wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(at),
                    end_of_pass_write_index: Some(at + 1),
                }
            });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
            pass.set_pipeline(kernel);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
        }
        self.gpu.queue.submit([encoder.finish()]);
    }

    /// Keeps the device's time of the call's kernels in the [`Gpu`]: the
    /// sum of each dispatch's end less its start, by the device's clock;
    /// none if some dispatch went untimed (more than the query set holds).
    pub(super) fn record_seconds(&self) -> Result<(), AttnError> {
        let (Some(set), written) = (&self.stamps, self.written.get()) else { return Ok(()) };
        if written == 0 || written != 2 * self.dispatched.get() {
            return Ok(());
        }
        let resolved = self.gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: u64::from(written) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
        encoder.resolve_query_set(set, 0..written, &resolved, 0);
        self.gpu.queue.submit([encoder.finish()]);
        let ticks: Vec<u64> = self
            .read_bytes(&resolved)?
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect();
        let total: u64 = ticks.chunks_exact(2).map(|p| p[1].saturating_sub(p[0])).sum();
        let seconds = total as f64 * f64::from(self.gpu.queue.get_timestamp_period()) * 1e-9;
        *self.gpu.seconds.lock().unwrap_or_else(|e| e.into_inner()) = Some(seconds);
        Ok(())
    }

    /// The floats of `buffer`, copied to one the CPU can map.
    pub(super) fn read_floats(&self, buffer: &wgpu::Buffer) -> Result<Vec<f32>, AttnError> {
        let bytes = self.read_bytes(buffer)?;
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// The bytes of `buffer`, copied to one the CPU can map.
    fn read_bytes(&self, buffer: &wgpu::Buffer) -> Result<Vec<u8>, AttnError> {
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

    /// `rows` rows of `buffer` (`n` unless said), `n × d`; an error naming
    /// `what` if an entry is not finite.
    pub(super) fn matrix(
        &self,
        buffer: &wgpu::Buffer,
        rows: usize,
        what: &'static str,
    ) -> Result<Array2<f32>, AttnError> {
        let x = unpadded(&self.read_floats(buffer)?, rows, self.d4, self.d);
        if let Some(((i, j), &value)) = x.indexed_iter().find(|(_, x)| !x.is_finite()) {
            return Err(AttnError::Overflow { what, position: (i, j), value });
        }
        Ok(x)
    }

    /// The output, `n × d`; an error if an entry is not finite.
    pub(super) fn output(&self) -> Result<Array2<f32>, AttnError> {
        self.matrix(&self.o, self.n, "the GPU's output")
    }
}
