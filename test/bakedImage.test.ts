// World: the OpenAPI emulator (testing/emulator).
/**
 * BakedImage against the local OpenAPI emulator: it waits for the Image Builder execution, owns the image the
 * execution produced (by the execution's ImageId, or the one image under the pipeline's unique name prefix),
 * and deletes it on destroy — also when masters still run from it. State is read from the emulator.
 */
import * as assert from "node:assert/strict";
import { awaitBakedImage, bakedImageProvider, deleteBakedImage, type BakedImageInputs } from "../src/providers/bakedImage";
import { useEmulator } from "../testing/emulator/fixture";

describe("BakedImage (emulator)", () => {
    const fx = useEmulator();
    const inputs: BakedImageInputs = { region: "cn-hangzhou", executionId: "exec-1", imageNamePrefix: "dev-node-0123456789", pollIntervalMs: 20, timeoutSeconds: 10 };

    it("waits while the build runs, then owns the image the execution names; destroy deletes exactly that image", async () => {
        const st = fx.emu.state;
        st.images.set("m-other", { imageId: "m-other", imageName: "someone-else", status: "Available" });
        st.imageBuilds.set("exec-1", { executionId: "exec-1", status: "PREPARING", imageId: "", errorInfo: "" });
        const seen: string[] = [];
        // The build moves on as it is read: the first read sees it PREPARING, the second BUILDING, the third done.
        let reads = 0;
        fx.emu.afterRequest = (req) => {
            if (req.action !== "DescribeImagePipelineExecutions") return;
            reads++;
            if (reads === 1) st.imageBuilds.get("exec-1")!.status = "BUILDING";
            if (reads === 2) {
                st.images.set("m-baked1", { imageId: "m-baked1", imageName: "dev-node-0123456789_20261203", status: "Available" });
                Object.assign(st.imageBuilds.get("exec-1")!, { status: "SUCCESS", imageId: "m-baked1" });
            }
        };
        const created = await bakedImageProvider.create!(inputs);
        assert.equal(reads, 3, "it waited through PREPARING and BUILDING");
        assert.equal(created.id, "m-baked1");
        assert.equal(created.outs.imageId, "m-baked1");
        const master = fx.emu.addInstance({ imageId: "m-baked1" });
        await bakedImageProvider.delete!(created.id, created.outs);
        assert.deepEqual([...st.images.keys()], ["m-other"], "the baked image is gone, nothing else");
        assert.ok(st.instances.has(master.instanceId), "a master made from it keeps running (Force)");
        await deleteBakedImage("cn-hangzhou", "m-baked1", (m) => seen.push(m));
        assert.match(seen.join("\n"), /already gone/, "a second delete is fine, with a warning");
    });

    it("without an ImageId on the execution, finds the one image under the pipeline's name prefix; refuses to guess between two", async () => {
        const st = fx.emu.state;
        st.imageBuilds.set("exec-1", { executionId: "exec-1", status: "SUCCESS", imageId: "", errorInfo: "" });
        st.images.set("m-a", { imageId: "m-a", imageName: "dev-node-0123456789_1", status: "Available" });
        st.images.set("m-x", { imageId: "m-x", imageName: "dev-node-99", status: "Available" });
        assert.deepEqual(await awaitBakedImage(inputs), { imageId: "m-a" });
        st.images.set("m-b", { imageId: "m-b", imageName: "dev-node-0123456789_2", status: "Available" });
        await assert.rejects(awaitBakedImage(inputs), /2 images are named dev-node-0123456789\*; expected exactly one/);
    });

    it("a failed, cancelled or unknown build fails with its cause and the fix; a slow one times out naming the execution", async () => {
        const st = fx.emu.state;
        st.imageBuilds.set("exec-1", { executionId: "exec-1", status: "FAILED", imageId: "", errorInfo: "apt-get install failed" });
        await assert.rejects(awaitBakedImage(inputs), /image build exec-1 FAILED: apt-get install failed\n  fix: /);
        st.imageBuilds.get("exec-1")!.status = "CANCELLED";
        await assert.rejects(awaitBakedImage(inputs), /exec-1 CANCELLED/);
        await assert.rejects(awaitBakedImage({ ...inputs, executionId: "exec-404" }), /exec-404 NOT FOUND/);
        st.imageBuilds.get("exec-1")!.status = "BUILDING";
        await assert.rejects(awaitBakedImage({ ...inputs, timeoutSeconds: 0.1 }), /exec-1 still BUILDING after 0\.1 s/);
        assert.equal(st.images.size, 0, "nothing created, nothing left");
    });

    it("a new execution replaces the image (new first); other input changes do not", async () => {
        const olds = { ...inputs, imageId: "m-old", providerVersion: "1" };
        const diff = await bakedImageProvider.diff!("m-old", olds, { ...inputs, executionId: "exec-2", providerVersion: "1" });
        assert.deepEqual(diff.replaces, ["executionId"]);
        assert.equal(diff.deleteBeforeReplace, false);
        const same = await bakedImageProvider.diff!("m-old", olds, { ...inputs, providerVersion: "1" });
        assert.equal(same.changes, false);
    });
});
