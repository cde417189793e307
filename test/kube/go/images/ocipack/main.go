// Command ocipack writes a directory tree as a one-layer OCI image archive that `ctr images import` reads
// (an OCI image layout in a tar: oci-layout, index.json, blobs/sha256/...), so the real nodes get their images
// without a registry.
//
//	ocipack -name registry.k8s.io/pause:3.10.2 -entrypoint /pause -out pause.tar ROOTFS
//
// The layer is the tree's files, directories and symbolic links, owned by root, with their modes and the time 0, in
// name order: the same tree gives the same archive. The index names the image with the annotations containerd reads
// (io.containerd.image.name, org.opencontainers.image.ref.name).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    map[string]string `json:"platform,omitempty"`
}

type blob struct {
	digest string
	data   []byte
}

func newBlob(data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{digest: "sha256:" + hex.EncodeToString(sum[:]), data: data}
}

// layer tars root (uncompressed, for the diff id) and gzips it (the blob).
func layer(root string) (diffID string, gz []byte, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(raw.Bytes())
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return "", nil, err
	}
	if err := zw.Close(); err != nil {
		return "", nil, err
	}
	return "sha256:" + hex.EncodeToString(sum[:]), out.Bytes(), nil
}

func main() {
	name := flag.String("name", "", "image name, e.g. registry.k8s.io/pause:3.10.2")
	entrypoint := flag.String("entrypoint", "", "entrypoint, space-separated")
	env := flag.String("env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "environment, comma-separated")
	out := flag.String("out", "", "output archive")
	flag.Parse()
	if *name == "" || *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ocipack -name NAME [-entrypoint CMD] [-env K=V,...] -out FILE ROOTFS")
		os.Exit(2)
	}
	if err := pack(*name, *entrypoint, *env, *out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "ocipack:", err)
		os.Exit(1)
	}
}

func pack(name, entrypoint, env, out, root string) error {
	diffID, gz, err := layer(root)
	if err != nil {
		return err
	}
	layerBlob := newBlob(gz)
	cfg := map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Env": strings.Split(env, ","), "Entrypoint": strings.Fields(entrypoint)},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	}
	cfgJSON, _ := json.Marshal(cfg)
	cfgBlob := newBlob(cfgJSON)
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: cfgBlob.digest, Size: len(cfgBlob.data)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar+gzip", Digest: layerBlob.digest, Size: len(layerBlob.data)}},
	})
	manifestBlob := newBlob(manifest)
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: manifestBlob.digest, Size: len(manifestBlob.data),
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name},
			Platform:    map[string]string{"architecture": "amd64", "os": "linux"},
		}},
	})

	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(p string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := add("index.json", index); err != nil {
		return err
	}
	for _, b := range []blob{layerBlob, cfgBlob, manifestBlob} {
		if err := add("blobs/sha256/"+strings.TrimPrefix(b.digest, "sha256:"), b.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
