/**
 * A tiny OCI image made here, with no registry: Debian's static busybox as /bin/busybox with applet symlinks,
 * a second copy at /opt/other (a program the rules do not allow), /tmp, /etc/passwd; one uncompressed tar
 * layer, the image config, the manifest, the index and `oci-layout`, in one OCI archive that
 * `ctr images import` takes. Its default command sleeps, so it also serves as the pod sandbox ("pause")
 * image.
 */

const dec = new TextDecoder();
const enc = new TextEncoder();

export const APPLETS = [
  "sh",
  "echo",
  "cat",
  "ls",
  "mkdir",
  "ln",
  "rm",
  "sleep",
  "true",
  "touch",
  "mv",
  "test",
  "id",
];

async function sha256(data: Uint8Array): Promise<string> {
  const h = new Uint8Array(await crypto.subtle.digest("SHA-256", data as Uint8Array<ArrayBuffer>));
  return [...h].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function tar(args: string[]): Promise<void> {
  const r = await new Deno.Command("tar", { args, stderr: "piped", stdout: "null" }).output();
  if (!r.success) throw new Error(`tar ${args.join(" ")}: ${dec.decode(r.stderr)}`);
}

/** Whether the ELF file at `path` has no program interpreter (a static binary runs in an empty image). */
export function isStaticElf(path: string): boolean {
  const b = Deno.readFileSync(path);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length < 64 || dv.getUint32(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) return false; // ELF64 LE
  const phoff = Number(dv.getBigUint64(32, true));
  const phentsize = dv.getUint16(54, true);
  const phnum = dv.getUint16(56, true);
  for (let i = 0; i < phnum; i++) {
    const off = phoff + i * phentsize;
    if (off + 4 > b.length) return false;
    if (dv.getUint32(off, true) === 3 /* PT_INTERP */) return false;
  }
  return true;
}

export interface BuiltImage {
  /** The OCI archive for `ctr images import`. */
  archive: string;
  /** The name it is imported under (`io.containerd.image.name`). */
  name: string;
  /** The image id: the digest of its config. */
  id: string;
}

/** Builds the image under `dir` (created) from the static busybox at `busybox`. */
export async function buildBusyboxImage(dir: string, busybox: string, name: string): Promise<BuiltImage> {
  if (!isStaticElf(busybox)) throw new Error(`${busybox} is not a static binary: install busybox-static`);
  const rootfs = `${dir}/rootfs`;
  for (const d of ["bin", "tmp", "etc", "proc", "dev", "sys", "opt", "root"]) {
    await Deno.mkdir(`${rootfs}/${d}`, { recursive: true });
  }
  await Deno.chmod(`${rootfs}/tmp`, 0o1777);
  await Deno.chmod(`${rootfs}/root`, 0o700);
  await Deno.copyFile(busybox, `${rootfs}/bin/busybox`);
  await Deno.chmod(`${rootfs}/bin/busybox`, 0o755);
  await Deno.copyFile(busybox, `${rootfs}/opt/other`);
  await Deno.chmod(`${rootfs}/opt/other`, 0o755);
  for (const a of APPLETS) await Deno.symlink("busybox", `${rootfs}/bin/${a}`);
  await Deno.writeTextFile(
    `${rootfs}/etc/passwd`,
    "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n",
  );
  await Deno.writeTextFile(`${rootfs}/etc/group`, "root:x:0:\nnogroup:x:65534:\n");

  const blobs = `${dir}/layout/blobs/sha256`;
  await Deno.mkdir(blobs, { recursive: true });
  const put = async (data: Uint8Array) => {
    const digest = await sha256(data);
    await Deno.writeFile(`${blobs}/${digest}`, data);
    return { digest: `sha256:${digest}`, size: data.length };
  };

  // The layer: root-owned, in a fixed order with a fixed time, so the same busybox gives the same image.
  const layerFile = `${dir}/layer.tar`;
  await tar([
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    "--mtime=@0",
    "-C",
    rootfs,
    "-cf",
    layerFile,
    ".",
  ]);
  const layer = await put(await Deno.readFile(layerFile));
  await Deno.remove(layerFile);

  const arch = Deno.build.arch === "aarch64" ? "arm64" : "amd64";
  const config = await put(enc.encode(JSON.stringify({
    architecture: arch,
    os: "linux",
    config: {
      Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      Cmd: ["/bin/sleep", "100000"],
      WorkingDir: "/",
    },
    rootfs: { type: "layers", diff_ids: [layer.digest] },
    history: [{ created_by: "hallpass tests/agent/cri/image.ts" }],
  })));
  const manifest = await put(enc.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.manifest.v1+json",
    config: { mediaType: "application/vnd.oci.image.config.v1+json", ...config },
    layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", ...layer }],
  })));
  const tag = name.slice(name.lastIndexOf(":") + 1);
  await Deno.writeTextFile(
    `${dir}/layout/index.json`,
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [{
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        ...manifest,
        platform: { architecture: arch, os: "linux" },
        annotations: { "io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag },
      }],
    }),
  );
  await Deno.writeTextFile(`${dir}/layout/oci-layout`, JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  const archive = `${dir}/image.tar`;
  await tar(["-C", `${dir}/layout`, "-cf", archive, "oci-layout", "index.json", "blobs"]);
  return { archive, name, id: config.digest };
}
