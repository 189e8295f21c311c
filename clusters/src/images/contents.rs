//! The images the real node needs, built from what is on this machine: a binary with the
//! shared libraries it loads, a busybox root file system, and the pod sandbox's pause.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ImageError;
use super::archive::{Entry, Image};

/// An image that runs `binary` as `/<name>`, with the shared libraries and loader it needs
/// (none for a static Go binary), at the paths the binary looks for them.
pub fn binary_image(reference: &str, binary: &Path) -> Result<Image, ImageError> {
    let name = binary
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| ImageError::Input(format!("{}: not a file", binary.display())))?;
    binary_image_at(reference, binary, &format!("/{name}"))
}

/// Like [`binary_image`], with the binary at `in_image`: release manifests name the path in
/// their `command` (`/manager` for Kueue and the AppWrapper operator).
pub fn binary_image_at(
    reference: &str,
    binary: &Path,
    in_image: &str,
) -> Result<Image, ImageError> {
    let in_image = in_image.to_string();
    let mut entries = vec![
        Entry::File {
            path: in_image.clone(),
            source: binary.to_path_buf(),
            mode: 0o755,
        },
        Entry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        },
    ];
    for library in shared_libraries(binary)? {
        entries.push(Entry::File {
            path: library.display().to_string(),
            source: library,
            mode: 0o755,
        });
    }
    Ok(Image {
        reference: reference.to_string(),
        entries,
        entrypoint: vec![in_image],
        user: NONROOT.into(),
        ..Default::default()
    })
}

/// distroless's `nonroot` user, which release images of Kueue, KWOK and the AppWrapper
/// operator run as.
pub const NONROOT: &str = "65532:65532";

/// The libraries `ldd` resolves for `binary`, loader included; empty for a static binary.
pub fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, ImageError> {
    let out = Command::new("ldd").arg(binary).output().map_err(|e| {
        ImageError::Tool(format!(
            "cannot run ldd (Debian package libc-bin) on {}: {e}",
            binary.display()
        ))
    })?;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    if !out.status.success() {
        return Err(ImageError::Tool(format!(
            "ldd {} failed: {text}",
            binary.display()
        )));
    }
    parse_ldd(&text)
}

fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, ImageError> {
    let mut libraries = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.contains("=> not found") {
            return Err(ImageError::Input(format!("a library is missing: {line}")));
        }
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` or `/lib64/ld-linux-x86-64.so.2 (0x...)`;
        // the vDSO has no file.
        let path = match line.split_once("=>") {
            Some((_, resolved)) => resolved.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            libraries.push(PathBuf::from(path));
        }
    }
    Ok(libraries)
}

/// Debian's `busybox-static`, installed by the `busybox-static` package.
pub const BUSYBOX: &str = "/bin/busybox";

/// Busybox as `/bin/busybox` with a link in `/bin` for each applet it has.
pub fn busybox_image(reference: &str, busybox: &Path) -> Result<Image, ImageError> {
    if !shared_libraries(busybox)?.is_empty() {
        return Err(ImageError::Input(format!(
            "{} is linked dynamically; the image needs the static one: apt-get install -y busybox-static",
            busybox.display()
        )));
    }
    let out = Command::new(busybox).arg("--list").output().map_err(|e| {
        ImageError::Tool(format!(
            "cannot run {} ({e}); install it with: apt-get install -y busybox-static",
            busybox.display()
        ))
    })?;
    let mut entries = vec![
        Entry::File {
            path: "/bin/busybox".into(),
            source: busybox.to_path_buf(),
            mode: 0o755,
        },
        Entry::Dir {
            path: "/tmp".into(),
            mode: 0o1777,
        },
    ];
    for applet in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        if applet != "busybox" && !applet.contains('/') {
            entries.push(Entry::Symlink {
                path: format!("/bin/{applet}"),
                target: "busybox".into(),
            });
        }
    }
    if !entries
        .iter()
        .any(|e| matches!(e, Entry::Symlink { path, .. } if path == "/bin/sh"))
    {
        return Err(ImageError::Input(format!(
            "`{} --list` names no sh applet",
            busybox.display()
        )));
    }
    Ok(Image {
        reference: reference.to_string(),
        entries,
        cmd: vec!["sh".into()],
        ..Default::default()
    })
}

/// Compiles the pod sandbox's `pause` from `pause.c` (the Kubernetes module's
/// `build/pause/linux/pause.c`) with `gcc -Os -static` into `out`.
pub fn compile_pause(pause_c: &Path, out: &Path) -> Result<(), ImageError> {
    let result = Command::new("gcc")
        .args(["-Os", "-static", "-o"])
        .arg(out)
        .arg(pause_c)
        .output()
        .map_err(|e| {
            ImageError::Tool(format!(
                "cannot run gcc ({e}); install it with: apt-get install -y gcc"
            ))
        })?;
    if !result.status.success() {
        return Err(ImageError::Tool(format!(
            "gcc -static {} failed (is libc6-dev installed? apt-get install -y gcc libc6-dev):\n{}",
            pause_c.display(),
            String::from_utf8_lossy(&result.stderr)
        )));
    }
    Ok(())
}

/// The sandbox image: the static pause binary as `/pause`, its entrypoint.
pub fn pause_image(reference: &str, pause: &Path) -> Image {
    Image {
        reference: reference.to_string(),
        entries: vec![Entry::File {
            path: "/pause".into(),
            source: pause.to_path_buf(),
            mode: 0o755,
        }],
        entrypoint: vec!["/pause".into()],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_library_paths_and_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libgcc_s.so.1"),
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2"),
            ]
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").is_err());
    }

    #[test]
    fn a_dynamic_binary_brings_its_libraries_and_loader() {
        // The test binary itself is linked against glibc.
        let me = std::env::current_exe().unwrap();
        let image = binary_image("awconf.local/me:1", &me).unwrap();
        let paths: Vec<_> = image
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::File { path, .. } => Some(path.clone()),
                _ => None,
            })
            .collect();
        assert!(paths.iter().any(|p| p.contains("libc.so")), "{paths:?}");
        assert!(paths.iter().any(|p| p.contains("ld-linux")), "{paths:?}");
        assert_eq!(image.entrypoint.len(), 1);
        assert!(paths.contains(&image.entrypoint[0]));
    }
}
