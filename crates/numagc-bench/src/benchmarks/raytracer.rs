//! raytracer (`manticore-numa-gc.md` §4.1): renders a square image in
//! parallel as a two-dimensional sequence and writes it to a PPM file. The
//! paper's program is an ID ray tracer without acceleration structures; this
//! one is of the same kind: a scene of spheres and a floor plane, point
//! lights, ambient + diffuse + Blinn-Phong specular shading, shadow rays, and
//! mirror reflections followed to a fixed depth ([`MAX_DEPTH`]).
//!
//! As in the original, every vector and colour is a heap record and every
//! vector operation allocates its result: the scene (spheres, plane,
//! materials, lights), each ray's origin and direction, each intersection
//! record and each shading term are numagc objects, and each pixel is the
//! colour record its trace returned.
//!
//! Parallelism: the image is a sequence of rows built by `tabulate` with one
//! row per piece; each row is itself a `tabulate` of pixels (split in halves
//! of at most 256 pixels, so larger rows fork too). The scene travels in the
//! tasks' environment (promoted once when a task is stolen). Writing the
//! file after the rendering is sequential, as in the paper.
//!
//! Output: the file is written inside the run, to `$NUMAGC_BENCH_OUT/`
//! (a directory) when set, else to the system's temporary directory, as
//! `raytracer-<size>.ppm` (binary P6, written under a temporary name and
//! renamed into place); its path and a hash of its pixel bytes are printed.
//!
//! Check: the file is read back; its header must be `P6\n<size> <size>\n255\n`,
//! its pixel bytes must be those the run wrote (same hash), and every
//! pixel's bytes must be within ±1 of those of an independent plain-Rust
//! renderer (`reference`, `f64` structs and no numagc) run on the same scene.
//!
//! Choices where the paper is vague: the scene, camera (90° field of view
//! at focal length 1), and shading constants are ours; colours are clamped
//! to [0, 1] and quantised to bytes by rounding.

use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{DescId, Descriptor, Handle, ObjectKind, Result, Runtime, Scope, View};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Reflections followed from a primary ray (which is depth 0).
const MAX_DEPTH: u32 = 3;
/// Ambient light, as a fraction of a surface's colour.
const AMBIENT: f64 = 0.1;
/// Secondary rays start this far off the surface along its normal, so that
/// they do not hit the surface they leave.
const SURFACE_OFFSET: f64 = 1e-6;
/// Hits closer than this along a ray are ignored.
const MIN_DISTANCE: f64 = 1e-9;
const EYE: [f64; 3] = [0.0, 1.2, -2.5];
/// Distance from the eye to the image plane (which spans [-1, 1]²).
const FOCAL_LENGTH: f64 = 1.0;
const BACKGROUND: [f64; 3] = [0.3, 0.45, 0.7];

/// A surface: colour, diffuse and specular coefficients, shininess,
/// reflectivity.
struct MaterialSpec {
    colour: [f64; 3],
    diffuse: f64,
    specular: f64,
    shininess: f64,
    reflectivity: f64,
}

const fn material(
    colour: [f64; 3],
    diffuse: f64,
    specular: f64,
    shininess: f64,
    reflectivity: f64,
) -> MaterialSpec {
    MaterialSpec {
        colour,
        diffuse,
        specular,
        shininess,
        reflectivity,
    }
}

/// The scene, as plain data; both renderers build theirs from it.
const SPHERES: &[([f64; 3], f64, MaterialSpec)] = &[
    (
        [0.0, 1.0, 3.0],
        1.0,
        material([0.85, 0.25, 0.2], 0.7, 0.6, 40.0, 0.25),
    ),
    (
        [-2.1, 0.75, 4.2],
        0.75,
        material([0.25, 0.75, 0.3], 0.8, 0.3, 20.0, 0.1),
    ),
    (
        [2.0, 0.9, 4.5],
        0.9,
        material([0.25, 0.35, 0.85], 0.6, 0.8, 80.0, 0.4),
    ),
    (
        [0.9, 0.35, 1.4],
        0.35,
        material([0.9, 0.8, 0.2], 0.8, 0.4, 30.0, 0.0),
    ),
    (
        [-1.0, 0.45, 1.6],
        0.45,
        material([0.9, 0.9, 0.9], 0.2, 0.9, 120.0, 0.8),
    ),
    (
        [-0.5, 3.2, 8.0],
        2.0,
        material([0.6, 0.4, 0.75], 0.7, 0.2, 10.0, 0.2),
    ),
];
/// The floor: the plane `normal · p = offset`.
const FLOOR: ([f64; 3], f64, MaterialSpec) = (
    [0.0, 1.0, 0.0],
    0.0,
    material([0.75, 0.75, 0.7], 0.8, 0.2, 8.0, 0.25),
);
/// Point lights: position and colour.
const LIGHTS: &[([f64; 3], [f64; 3])] = &[
    ([-4.0, 7.0, -2.0], [0.7, 0.7, 0.7]),
    ([5.0, 5.0, 0.0], [0.4, 0.35, 0.3]),
];

/// Field numbers of the records (value fields first, then raw ones).
const MATERIAL_COLOUR: usize = 0; // raw 1..5: diffuse, specular, shininess, reflectivity
const SHAPE_GEOMETRY: usize = 0; // sphere: centre; plane: normal
const SHAPE_MATERIAL: usize = 1;
const SHAPE_SIZE: usize = 2; // sphere: radius; plane: offset
const HIT_POINT: usize = 0;
const HIT_NORMAL: usize = 1;
const HIT_MATERIAL: usize = 2;

/// The records' descriptors.
#[derive(Clone, Copy)]
struct Descs {
    vec3: DescId,
    colour: DescId,
    material: DescId,
    sphere: DescId,
    plane: DescId,
    light: DescId,
    hit: DescId,
}

pub struct Raytracer;

// ---- vector records: every operation allocates its result ------------------

fn triple(v: View<'_>) -> [f64; 3] {
    [v.f64(0), v.f64(1), v.f64(2)]
}

fn read(s: &Scope<'_>, h: Handle<'_>) -> [f64; 3] {
    triple(s.view(h))
}

fn record<'s>(s: &mut Scope<'s>, desc: DescId, v: [f64; 3]) -> Result<Handle<'s>> {
    s.alloc_mixed(desc, &[], &v.map(f64::to_bits))
}

fn add<'s>(s: &mut Scope<'s>, desc: DescId, a: Handle<'_>, b: Handle<'_>) -> Result<Handle<'s>> {
    let (a, b) = (read(s, a), read(s, b));
    record(s, desc, [a[0] + b[0], a[1] + b[1], a[2] + b[2]])
}

fn sub<'s>(s: &mut Scope<'s>, desc: DescId, a: Handle<'_>, b: Handle<'_>) -> Result<Handle<'s>> {
    let (a, b) = (read(s, a), read(s, b));
    record(s, desc, [a[0] - b[0], a[1] - b[1], a[2] - b[2]])
}

/// Component-wise product (colour filtering).
fn mul<'s>(s: &mut Scope<'s>, desc: DescId, a: Handle<'_>, b: Handle<'_>) -> Result<Handle<'s>> {
    let (a, b) = (read(s, a), read(s, b));
    record(s, desc, [a[0] * b[0], a[1] * b[1], a[2] * b[2]])
}

fn scale<'s>(s: &mut Scope<'s>, desc: DescId, a: Handle<'_>, k: f64) -> Result<Handle<'s>> {
    let a = read(s, a);
    record(s, desc, [a[0] * k, a[1] * k, a[2] * k])
}

fn dot(s: &Scope<'_>, a: Handle<'_>, b: Handle<'_>) -> f64 {
    let (a, b) = (read(s, a), read(s, b));
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn normalise<'s>(s: &mut Scope<'s>, desc: DescId, a: Handle<'_>) -> Result<Handle<'s>> {
    let len = dot(s, a, a).sqrt();
    scale(s, desc, a, 1.0 / len)
}

// ---- the scene ----------------------------------------------------------------

fn alloc_material<'s>(s: &mut Scope<'s>, d: Descs, m: &MaterialSpec) -> Result<Handle<'s>> {
    let colour = record(s, d.colour, m.colour)?;
    let raw = [m.diffuse, m.specular, m.shininess, m.reflectivity].map(f64::to_bits);
    s.alloc_mixed(d.material, &[colour], &raw)
}

/// The scene's objects (a vector of spheres and the plane) and lights (a
/// vector).
fn build_scene<'s>(s: &mut Scope<'s>, d: Descs) -> Result<(Handle<'s>, Handle<'s>)> {
    let mut objects = Vec::new();
    for (centre, radius, m) in SPHERES {
        let centre = record(s, d.vec3, *centre)?;
        let material = alloc_material(s, d, m)?;
        objects.push(s.alloc_mixed(d.sphere, &[centre, material], &[radius.to_bits()])?);
    }
    let normal = record(s, d.vec3, FLOOR.0)?;
    let material = alloc_material(s, d, &FLOOR.2)?;
    objects.push(s.alloc_mixed(d.plane, &[normal, material], &[FLOOR.1.to_bits()])?);
    let mut lights = Vec::new();
    for (position, colour) in LIGHTS {
        let position = record(s, d.vec3, *position)?;
        let colour = record(s, d.colour, *colour)?;
        lights.push(s.alloc_mixed(d.light, &[position, colour], &[])?);
    }
    Ok((s.alloc_vector(&objects)?, s.alloc_vector(&lights)?))
}

// ---- tracing --------------------------------------------------------------------

/// The distance along the ray (`origin`, unit `dir`) to `object`, if it hits.
fn distance(
    s: &mut Scope<'_>,
    d: Descs,
    object: Handle<'_>,
    origin: Handle<'_>,
    dir: Handle<'_>,
) -> Result<Option<f64>> {
    s.scope(|s| {
        let geometry = s.field(object, SHAPE_GEOMETRY)?;
        let size = s.view(object).f64(SHAPE_SIZE);
        if s.view(object).kind() == Some(ObjectKind::Mixed(d.sphere)) {
            let oc = sub(s, d.vec3, origin, geometry)?;
            let b = dot(s, oc, dir);
            let discriminant = b * b - (dot(s, oc, oc) - size * size);
            if discriminant < 0.0 {
                return Ok(None);
            }
            let root = discriminant.sqrt();
            let (near, far) = (-b - root, -b + root);
            Ok(if near > MIN_DISTANCE {
                Some(near)
            } else {
                (far > MIN_DISTANCE).then_some(far)
            })
        } else {
            let denominator = dot(s, geometry, dir);
            if denominator.abs() < MIN_DISTANCE {
                return Ok(None);
            }
            let t = (size - dot(s, geometry, origin)) / denominator;
            Ok((t > MIN_DISTANCE).then_some(t))
        }
    })
}

/// The index and distance of the nearest object the ray hits.
fn nearest(
    s: &mut Scope<'_>,
    d: Descs,
    objects: Handle<'_>,
    origin: Handle<'_>,
    dir: Handle<'_>,
) -> Result<Option<(usize, f64)>> {
    let mut best: Option<(usize, f64)> = None;
    for k in 0..s.view(objects).len() {
        let t = s.scope(|s| {
            let object = s.field(objects, k)?;
            distance(s, d, object, origin, dir)
        })?;
        if let Some(t) = t {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((k, t));
            }
        }
    }
    Ok(best)
}

/// Whether some object lies on the ray closer than `limit`.
fn shadowed(
    s: &mut Scope<'_>,
    d: Descs,
    objects: Handle<'_>,
    origin: Handle<'_>,
    dir: Handle<'_>,
    limit: f64,
) -> Result<bool> {
    for k in 0..s.view(objects).len() {
        let t = s.scope(|s| {
            let object = s.field(objects, k)?;
            distance(s, d, object, origin, dir)
        })?;
        if t.is_some_and(|t| t < limit) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The colour seen along the ray (`origin`, unit `dir`); `scene` is
/// `[objects, lights]`.
fn trace<'s>(
    s: &mut Scope<'s>,
    d: Descs,
    scene: &[Handle<'_>],
    origin: Handle<'_>,
    dir: Handle<'_>,
    depth: u32,
) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let Some((k, t)) = nearest(s, d, scene[0], origin, dir)? else {
            return record(s, d.colour, BACKGROUND);
        };
        let object = s.field(scene[0], k)?;
        let along = scale(s, d.vec3, dir, t)?;
        let point = add(s, d.vec3, origin, along)?;
        let geometry = s.field(object, SHAPE_GEOMETRY)?;
        let normal = if s.view(object).kind() == Some(ObjectKind::Mixed(d.sphere)) {
            let outward = sub(s, d.vec3, point, geometry)?;
            normalise(s, d.vec3, outward)?
        } else {
            geometry
        };
        let material = s.field(object, SHAPE_MATERIAL)?;
        let hit = s.alloc_mixed(d.hit, &[point, normal, material], &[t.to_bits()])?;
        shade(s, d, scene, hit, dir, depth)
    })
}

/// Ambient, then each light's diffuse and specular terms (unless the point
/// is in its shadow), then the reflection.
fn shade<'s>(
    s: &mut Scope<'s>,
    d: Descs,
    scene: &[Handle<'_>],
    hit: Handle<'_>,
    dir: Handle<'_>,
    depth: u32,
) -> Result<Handle<'s>> {
    let (point, normal, material) = (
        s.field(hit, HIT_POINT)?,
        s.field(hit, HIT_NORMAL)?,
        s.field(hit, HIT_MATERIAL)?,
    );
    let surface = s.field(material, MATERIAL_COLOUR)?;
    let m = s.view(material);
    let (diffuse_k, specular_k, shininess, reflectivity) = (m.f64(1), m.f64(2), m.f64(3), m.f64(4));
    let lift = scale(s, d.vec3, normal, SURFACE_OFFSET)?;
    let start = add(s, d.vec3, point, lift)?;
    let ambient = scale(s, d.colour, surface, AMBIENT)?;
    let colour = s.slot(ambient);
    for l in 0..s.view(scene[1]).len() {
        s.scope(|s| -> Result<()> {
            let light = s.field(scene[1], l)?;
            let (position, light_colour) = (s.field(light, 0)?, s.field(light, 1)?);
            let to_light = sub(s, d.vec3, position, point)?;
            let dist = dot(s, to_light, to_light).sqrt();
            let towards = scale(s, d.vec3, to_light, 1.0 / dist)?;
            let cosine = dot(s, normal, towards);
            if cosine <= 0.0 || shadowed(s, d, scene[0], start, towards, dist)? {
                return Ok(());
            }
            let filtered = mul(s, d.colour, surface, light_colour)?;
            let diffuse = scale(s, d.colour, filtered, diffuse_k * cosine)?;
            let halfway_sum = sub(s, d.vec3, towards, dir)?;
            let halfway = normalise(s, d.vec3, halfway_sum)?;
            let highlight = dot(s, normal, halfway).max(0.0).powf(shininess);
            let specular = scale(s, d.colour, light_colour, specular_k * highlight)?;
            let term = add(s, d.colour, diffuse, specular)?;
            let sum = add(s, d.colour, colour.get(), term)?;
            s.assign(colour, sum);
            Ok(())
        })?;
    }
    if depth < MAX_DEPTH && reflectivity > 0.0 {
        let twice = scale(s, d.vec3, normal, 2.0 * dot(s, dir, normal))?;
        let mirrored = sub(s, d.vec3, dir, twice)?;
        let reflected = trace(s, d, scene, start, mirrored, depth + 1)?;
        let term = scale(s, d.colour, reflected, reflectivity)?;
        let sum = add(s, d.colour, colour.get(), term)?;
        s.assign(colour, sum);
    }
    Ok(colour.get())
}

/// The primary ray's direction through pixel (`row`, `col`), unnormalised.
fn pixel_direction(size: usize, row: usize, col: usize) -> [f64; 3] {
    let u = (col as f64 + 0.5) / size as f64 * 2.0 - 1.0;
    let v = 1.0 - (row as f64 + 0.5) / size as f64 * 2.0;
    [u, v, FOCAL_LENGTH]
}

fn render_pixel<'s>(
    s: &mut Scope<'s>,
    d: Descs,
    scene: &[Handle<'_>],
    size: usize,
    row: usize,
    col: usize,
) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let eye = record(s, d.vec3, EYE)?;
        let through = record(s, d.vec3, pixel_direction(size, row, col))?;
        let dir = normalise(s, d.vec3, through)?;
        trace(s, d, scene, eye, dir, 0)
    })
}

/// The image: a sequence of rows, each a sequence of colour records.
fn render<'s>(s: &mut Scope<'s>, d: Descs, size: usize) -> Result<Handle<'s>> {
    let (objects, lights) = build_scene(s, d)?;
    s.tabulate(&[objects, lights], 0, size, 1, move |s, scene, row| {
        s.tabulate(scene, 0, size, size, move |s, scene, col| {
            render_pixel(s, d, scene, size, row, col)
        })
    })
}

/// A colour component as a byte: clamped to [0, 1], scaled and rounded.
fn quantise(c: f64) -> u8 {
    (c.clamp(0.0, 1.0) * 255.0).round() as u8
}

/// 64-bit FNV-1a of `bytes`, continuing from `hash`.
fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Writes the image as a binary PPM (P6) at `path`; returns the FNV-1a hash
/// of its pixel bytes. The file is written under a name of its own and
/// renamed into place, so that a concurrent run (the tests run two) never
/// reads a half-written file.
fn write_ppm(
    s: &mut Scope<'_>,
    image: Handle<'_>,
    size: usize,
    path: &Path,
) -> std::result::Result<u64, String> {
    static WRITES: AtomicUsize = AtomicUsize::new(0);
    let partial = path.with_extension(format!(
        "ppm.{}-{}.part",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let io_err = |e: std::io::Error| format!("{}: {e}", partial.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(&partial).map_err(io_err)?);
    write!(out, "P6\n{size} {size}\n255\n").map_err(io_err)?;
    let mut line = Vec::with_capacity(3 * size);
    let mut hash = FNV_OFFSET;
    for i in 0..size {
        line.clear();
        // A scope per row, so that the rows' handles do not pile up.
        s.scope(|s| {
            let row = s.seq_get(image, i)?;
            s.seq_for_each(row, |pixel| line.extend(triple(pixel).map(quantise)))
        })
        .map_err(rt_err)?;
        hash = fnv1a(hash, &line);
        out.write_all(&line).map_err(io_err)?;
    }
    out.flush().map_err(io_err)?;
    drop(out);
    std::fs::rename(&partial, path).map_err(io_err)?;
    Ok(hash)
}

fn output_path(size: usize) -> PathBuf {
    let dir = std::env::var_os("NUMAGC_BENCH_OUT").map_or_else(std::env::temp_dir, PathBuf::from);
    dir.join(format!("raytracer-{size}.ppm"))
}

impl Benchmark for Raytracer {
    fn name(&self) -> &'static str {
        "raytracer"
    }
    fn source(&self) -> &'static str {
        "manticore-numa-gc.md §4.1"
    }
    fn description(&self) -> &'static str {
        "ray trace spheres and a plane (shadows, reflections) into a 2-D sequence, write a PPM"
    }
    fn params(&self) -> &'static [Param] {
        &[Param {
            name: "size",
            help: "image width and height in pixels",
            quick: 256,
            paper: 512,
            scale: 2_400,
            min: 1,
            max: 8192,
        }]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let size = p.usize("size");
        let register = |name: &str, size: usize, pointers: &[usize]| {
            rt.register(Descriptor::mixed(name, size, pointers).map_err(rt_err)?)
                .map_err(rt_err)
        };
        let d = Descs {
            vec3: register("vec3", 3, &[])?,
            colour: register("colour", 3, &[])?,
            material: register("material", 5, &[MATERIAL_COLOUR])?,
            sphere: register("sphere", 3, &[SHAPE_GEOMETRY, SHAPE_MATERIAL])?,
            plane: register("plane", 3, &[SHAPE_GEOMETRY, SHAPE_MATERIAL])?,
            light: register("light", 2, &[0, 1])?,
            hit: register("hit", 4, &[HIT_POINT, HIT_NORMAL, HIT_MATERIAL])?,
        };
        let path = output_path(size);
        let file = path.clone();
        let hash = rt
            .run_on(0, move |s| {
                let image = render(s, d, size).map_err(rt_err)?;
                write_ppm(s, image, size, &file)
            })
            .map_err(rt_err)??;
        let output = format!(
            "raytracer: {size}x{size} pixels, {} objects, {} lights, reflection depth {MAX_DEPTH}\n\
             wrote {} (FNV-1a of the pixel bytes {hash:#018x})\n",
            SPHERES.len() + 1,
            LIGHTS.len(),
            path.display()
        );
        Ok(Outcome::new(output, move || check_file(&path, size, hash)))
    }
}

/// Reads the written file back and compares it with the reference renderer
/// (and its hash with the one of the bytes the run wrote, in case a
/// concurrent run replaced the file).
fn check_file(path: &Path, size: usize, written_hash: u64) -> std::result::Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let header = format!("P6\n{size} {size}\n255\n");
    let Some(body) = bytes.strip_prefix(header.as_bytes()) else {
        return Err(format!("{}: the header is not {header:?}", path.display()));
    };
    if body.len() != 3 * size * size {
        return Err(format!(
            "{}: {} pixel bytes, expected {}",
            path.display(),
            body.len(),
            3 * size * size
        ));
    }
    if fnv1a(FNV_OFFSET, body) != written_hash {
        return Err(format!(
            "{}: the pixel bytes are not those the run wrote",
            path.display()
        ));
    }
    let want_image = reference::render(size);
    let mut bad = 0usize;
    let mut first = None;
    for row in 0..size {
        for col in 0..size {
            let want = want_image[row * size + col];
            let at = 3 * (row * size + col);
            let got = &body[at..at + 3];
            if got.iter().zip(want).any(|(&g, w)| g.abs_diff(w) > 1) {
                bad += 1;
                first.get_or_insert(format!(
                    "pixel ({row}, {col}) is {got:?}, expected {want:?}"
                ));
            }
        }
    }
    match first {
        None => Ok(()),
        Some(f) => Err(format!(
            "{bad} pixels differ by more than 1 from the reference; first: {f}"
        )),
    }
}

/// An independent renderer of the same scene: plain `f64` structs, no
/// numagc, nothing allocated per operation.
mod reference {
    use super::{
        AMBIENT, BACKGROUND, EYE, FLOOR, FOCAL_LENGTH, LIGHTS, MAX_DEPTH, MIN_DISTANCE, SPHERES,
        SURFACE_OFFSET,
    };
    use std::ops::{Add, Mul, Sub};

    #[derive(Clone, Copy)]
    struct V(f64, f64, f64);

    impl Add for V {
        type Output = V;
        fn add(self, o: V) -> V {
            V(self.0 + o.0, self.1 + o.1, self.2 + o.2)
        }
    }
    impl Sub for V {
        type Output = V;
        fn sub(self, o: V) -> V {
            V(self.0 - o.0, self.1 - o.1, self.2 - o.2)
        }
    }
    impl Mul<f64> for V {
        type Output = V;
        fn mul(self, k: f64) -> V {
            V(self.0 * k, self.1 * k, self.2 * k)
        }
    }
    impl V {
        fn of(a: [f64; 3]) -> V {
            V(a[0], a[1], a[2])
        }
        fn dot(self, o: V) -> f64 {
            self.0 * o.0 + self.1 * o.1 + self.2 * o.2
        }
        fn times(self, o: V) -> V {
            V(self.0 * o.0, self.1 * o.1, self.2 * o.2)
        }
        fn unit(self) -> V {
            self * (1.0 / self.dot(self).sqrt())
        }
    }

    enum Shape {
        Sphere { centre: V, radius: f64 },
        Plane { normal: V, offset: f64 },
    }

    struct Object {
        shape: Shape,
        material: &'static super::MaterialSpec,
    }

    fn scene() -> Vec<Object> {
        let mut objects: Vec<Object> = SPHERES
            .iter()
            .map(|(c, r, m)| Object {
                shape: Shape::Sphere {
                    centre: V::of(*c),
                    radius: *r,
                },
                material: m,
            })
            .collect();
        objects.push(Object {
            shape: Shape::Plane {
                normal: V::of(FLOOR.0),
                offset: FLOOR.1,
            },
            material: &FLOOR.2,
        });
        objects
    }

    fn hit_distance(o: &Object, origin: V, dir: V) -> Option<f64> {
        match o.shape {
            Shape::Sphere { centre, radius } => {
                let oc = origin - centre;
                let b = oc.dot(dir);
                let disc = b * b - (oc.dot(oc) - radius * radius);
                if disc < 0.0 {
                    return None;
                }
                let r = disc.sqrt();
                [-b - r, -b + r].into_iter().find(|&t| t > MIN_DISTANCE)
            }
            Shape::Plane { normal, offset } => {
                let den = normal.dot(dir);
                if den.abs() < MIN_DISTANCE {
                    return None;
                }
                Some((offset - normal.dot(origin)) / den).filter(|&t| t > MIN_DISTANCE)
            }
        }
    }

    fn trace(scene: &[Object], origin: V, dir: V, depth: u32) -> V {
        let mut best: Option<(&Object, f64)> = None;
        for o in scene {
            if let Some(t) = hit_distance(o, origin, dir) {
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((o, t));
                }
            }
        }
        let Some((o, t)) = best else {
            return V::of(BACKGROUND);
        };
        let p = origin + dir * t;
        let n = match o.shape {
            Shape::Sphere { centre, .. } => (p - centre).unit(),
            Shape::Plane { normal, .. } => normal,
        };
        let m = o.material;
        let surface = V::of(m.colour);
        let start = p + n * SURFACE_OFFSET;
        let mut c = surface * AMBIENT;
        for (pos, col) in LIGHTS {
            let to_light = V::of(*pos) - p;
            let dist = to_light.dot(to_light).sqrt();
            let l = to_light * (1.0 / dist);
            let cosine = n.dot(l);
            if cosine <= 0.0
                || scene
                    .iter()
                    .any(|o| hit_distance(o, start, l).is_some_and(|t| t < dist))
            {
                continue;
            }
            let light = V::of(*col);
            let diffuse = surface.times(light) * (m.diffuse * cosine);
            let h = (l - dir).unit();
            let specular = light * (m.specular * n.dot(h).max(0.0).powf(m.shininess));
            c = c + (diffuse + specular);
        }
        if depth < MAX_DEPTH && m.reflectivity > 0.0 {
            let r = dir - n * (2.0 * dir.dot(n));
            c = c + trace(scene, start, r, depth + 1) * m.reflectivity;
        }
        c
    }

    /// The bytes of the pixels of a `size`² image, row by row.
    pub fn render(size: usize) -> Vec<[u8; 3]> {
        let scene = scene();
        let n = size as f64;
        let mut pixels = Vec::with_capacity(size * size);
        for row in 0..size {
            for col in 0..size {
                let dir = V(
                    (col as f64 + 0.5) / n * 2.0 - 1.0,
                    1.0 - (row as f64 + 0.5) / n * 2.0,
                    FOCAL_LENGTH,
                )
                .unit();
                let c = trace(&scene, V::of(EYE), dir, 0);
                pixels.push([c.0, c.1, c.2].map(|x| (x.clamp(0.0, 1.0) * 255.0).round() as u8));
            }
        }
        pixels
    }
}
