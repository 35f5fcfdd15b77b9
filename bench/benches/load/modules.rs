//! The guests the load benchmark runs, generated: p1 commands whose
//! `_start` does one thing, made as large as an interpreter by functions
//! that are compiled but never called, and a data segment as large as an
//! interpreter's.

use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function, FunctionSection,
    ImportSection, Instruction, MemArg, MemorySection, MemoryType, Module, TypeSection, ValType,
};

/// Where the data segment starts, above the scratch space and the paths.
const DATA_AT: u32 = 1 << 20;
/// The buffer every read and write goes through, 64 KiB at 64 KiB.
const BUF: i32 = 64 << 10;
const BUF_LEN: i32 = 64 << 10;
/// Paths are laid out from here.
const PATHS: u32 = 1024;

/// What `_start` does.
pub(crate) enum Body<'a> {
    /// `sched_yield`, then returns: a command that does nothing.
    Yield,
    /// Opens each path for reading (in preopen 3), reads up to 64 KiB of
    /// it, closes it; then creates `write` (in preopen `write_fd`: 3, or a
    /// scratch directory's 4), writes 64 KiB to it, and calls `bench.park`
    /// if `park`. Any failed call traps.
    Files { read: &'a [String], write: Option<&'a str>, write_fd: i32, park: bool },
}

/// A p1 command: `_start` does `body`; `code` bytes of other functions
/// (arithmetic loops, never called) and a data segment of `data` bytes of
/// noise make it as large as an interpreter.
pub(crate) fn command(body: &Body<'_>, code: usize, data: usize) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([], [ValType::I32]); // 0 sched_yield
    types.ty().function([], []); // 1 _start, park
    types.ty().function([ValType::I32], [ValType::I32]); // 2 filler, fd_close
    use ValType::{I32, I64};
    types.ty().function([I32, I32, I32, I32, I32, I64, I64, I32, I32], [I32]); // 3 path_open
    types.ty().function([I32, I32, I32, I32], [I32]); // 4 fd_read, fd_write
    let mut imports = ImportSection::new();
    let p1 = "wasi_snapshot_preview1";
    let mut paths = Vec::new();
    match body {
        Body::Yield => {
            imports.import(p1, "sched_yield", EntityType::Function(0));
        }
        Body::Files { read, write, park, .. } => {
            imports.import(p1, "path_open", EntityType::Function(3)); // 0
            imports.import(p1, "fd_read", EntityType::Function(4)); // 1
            imports.import(p1, "fd_write", EntityType::Function(4)); // 2
            imports.import(p1, "fd_close", EntityType::Function(2)); // 3
            if *park {
                imports.import("bench", "park", EntityType::Function(1)); // 4
            }
            paths.extend(read.iter().map(String::as_str));
            paths.extend(*write);
        }
    }
    let mut start = Function::new([]);
    match body {
        Body::Yield => {
            start.instruction(&Instruction::Call(0)).instruction(&Instruction::Drop);
        }
        Body::Files { read, write_fd, park, .. } => {
            // The iovec at 16 is the buffer, once for all calls.
            store(&mut start, 16, BUF);
            store(&mut start, 20, BUF_LEN);
            let mut at = PATHS;
            for (i, path) in paths.iter().enumerate() {
                let writing = i == read.len();
                // oflags CREAT | TRUNC; rights FD_READ or FD_WRITE.
                let (oflags, rights) = if writing { (9, 64) } else { (0, 2) };
                let fd = if writing { *write_fd } else { 3 };
                for arg in [fd, 0, at as i32, path.len() as i32, oflags] {
                    start.instruction(&Instruction::I32Const(arg));
                }
                start.instruction(&Instruction::I64Const(rights)).instruction(&Instruction::I64Const(0));
                start.instruction(&Instruction::I32Const(0)).instruction(&Instruction::I32Const(8));
                checked(&mut start, 0);
                load(&mut start, 8);
                for arg in [16, 1, 24] {
                    start.instruction(&Instruction::I32Const(arg));
                }
                checked(&mut start, if writing { 2 } else { 1 });
                load(&mut start, 8);
                checked(&mut start, 3);
                at += path.len() as u32;
            }
            if *park {
                start.instruction(&Instruction::Call(4));
            }
        }
    }
    start.instruction(&Instruction::End);

    let imported = match body {
        Body::Yield => 1,
        Body::Files { park, .. } => 4 + u32::from(*park),
    };
    let mut functions = FunctionSection::new();
    let mut bodies = CodeSection::new();
    functions.function(1);
    bodies.function(&start);
    let filler = filler();
    for _ in 0..code / filler.byte_len() {
        functions.function(2);
        bodies.function(&filler);
    }
    let pages = (u64::from(DATA_AT) + data as u64).div_ceil(64 << 10) + 1;
    let mut memory = MemorySection::new();
    memory.memory(MemoryType { minimum: pages, maximum: None, memory64: false, shared: false, page_size_log2: None });
    let mut exports = ExportSection::new();
    exports.export("_start", ExportKind::Func, imported).export("memory", ExportKind::Memory, 0);
    let mut segments = DataSection::new();
    segments.active(0, &ConstExpr::i32_const(PATHS as i32), paths.concat().into_bytes());
    if data > 0 {
        segments.active(0, &ConstExpr::i32_const(DATA_AT as i32), noise(data));
    }
    let mut m = Module::new();
    m.section(&types).section(&imports).section(&functions).section(&memory).section(&exports);
    m.section(&bodies).section(&segments);
    m.finish()
}

/// Calls import `f` and traps unless it returned 0 (errno success).
fn checked(f: &mut Function, import: u32) {
    f.instruction(&Instruction::Call(import))
        .instruction(&Instruction::If(BlockType::Empty))
        .instruction(&Instruction::Unreachable)
        .instruction(&Instruction::End);
}

fn store(f: &mut Function, at: i32, value: i32) {
    f.instruction(&Instruction::I32Const(at)).instruction(&Instruction::I32Const(value));
    f.instruction(&Instruction::I32Store(MemArg { offset: 0, align: 2, memory_index: 0 }));
}

fn load(f: &mut Function, at: i32) {
    f.instruction(&Instruction::I32Const(at));
    f.instruction(&Instruction::I32Load(MemArg { offset: 0, align: 2, memory_index: 0 }));
}

/// A loop of arithmetic, as compiled code of an interpreter's size is.
fn filler() -> Function {
    let mut f = Function::new([(2, ValType::I32)]);
    f.instruction(&Instruction::Loop(BlockType::Empty));
    for k in 0..40 {
        f.instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::I32Const(k * 7 + 1))
            .instruction(&Instruction::I32Mul)
            .instruction(&Instruction::LocalGet(1))
            .instruction(&Instruction::I32Xor)
            .instruction(&Instruction::LocalSet(1));
    }
    f.instruction(&Instruction::LocalGet(0))
        .instruction(&Instruction::I32Const(1))
        .instruction(&Instruction::I32Sub)
        .instruction(&Instruction::LocalTee(0))
        .instruction(&Instruction::BrIf(0))
        .instruction(&Instruction::End)
        .instruction(&Instruction::LocalGet(1))
        .instruction(&Instruction::End);
    f
}

/// `len` bytes that do not compress or dedupe.
pub(crate) fn noise(len: usize) -> Vec<u8> {
    let mut rng = packfs_test_support::Rng::new(len as u64);
    let mut out = vec![0u8; len];
    rng.fill(&mut out);
    out
}
