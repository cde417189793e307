// A stand-in for github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc, which the Go module proxy does not
// serve (403 "not available" for every version, so flanneld's tencent-vpc backend cannot be built from the proxy).
// It has the types that backend compiles against and a client whose every call fails: the real nodes run flannel's
// alloc backend, never tencent-vpc. See docs/real-cluster.md.
module github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc

go 1.21
