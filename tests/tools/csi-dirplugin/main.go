// csi-dirplugin is a minimal CSI plugin for tests: each volume is a directory
// under -root, bind-mounted into place on publish. It stands in for
// csi-driver-host-path, whose Go module proxy.golang.org refuses here, so the
// Nomad side (plugin health, volume create/register, claims) runs for real.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const pluginName = "dir.csi.nomad-zfs-csi"

// Volume IDs become directory names, so only plain names are accepted.
var volumeID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

type plugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	root, nodeID string
}

func (p *plugin) dir(id string) (string, error) {
	if !volumeID.MatchString(id) {
		return "", status.Errorf(codes.InvalidArgument, "volume id %q: use letters, digits, '_', '.', '-'", id)
	}
	return filepath.Join(p.root, id), nil
}

func (p *plugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: pluginName, VendorVersion: "0.1.0"}, nil
}

func (p *plugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
			Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}}}}, nil
}

func (p *plugin) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (p *plugin) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{
			Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}}}}}, nil
}

func (p *plugin) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	dir, err := p.dir(req.GetName())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId: req.GetName(), CapacityBytes: req.GetCapacityRange().GetRequiredBytes(),
		VolumeContext: req.GetParameters()}}, nil
}

func (p *plugin) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	dir, err := p.dir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (p *plugin) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	dir, err := p.dir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s: %v", req.GetVolumeId(), err)
	}
	for _, c := range req.GetVolumeCapabilities() {
		if c.GetBlock() != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: "block access is not supported"}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: req.GetVolumeCapabilities()}}, nil
}

func (p *plugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: p.nodeID}, nil
}

func (p *plugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

func (p *plugin) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	dir, err := p.dir(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if err := os.MkdirAll(target, 0o755); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	flags := uintptr(syscall.MS_BIND)
	if err := syscall.Mount(dir, target, "", flags, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s on %s: %v", dir, target, err)
	}
	if req.GetReadonly() {
		if err := syscall.Mount("", target, "", flags|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return nil, status.Errorf(codes.Internal, "read-only remount of %s: %v", target, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (p *plugin) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	target := req.GetTargetPath()
	if err := syscall.Unmount(target, 0); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
		return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func main() {
	endpoint := flag.String("endpoint", os.Getenv("CSI_ENDPOINT"), "unix:///path/to/csi.sock (default $CSI_ENDPOINT)")
	root := flag.String("root", "", "directory that holds one sub-directory per volume")
	nodeID := flag.String("node-id", "", "node id reported to Nomad (default: hostname)")
	flag.Parse()
	if *root == "" {
		log.Fatal("-root is required")
	}
	u, err := url.Parse(*endpoint)
	if err != nil || u.Scheme != "unix" {
		log.Fatalf("-endpoint %q: want unix:///path", *endpoint)
	}
	if *nodeID == "" {
		*nodeID, _ = os.Hostname()
	}
	if err := os.MkdirAll(*root, 0o755); err != nil {
		log.Fatal(err)
	}
	_ = os.Remove(u.Path)
	lis, err := net.Listen("unix", u.Path)
	if err != nil {
		log.Fatal(err)
	}
	p := &plugin{root: *root, nodeID: *nodeID}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		log.Printf("%s err=%v", info.FullMethod, err)
		return resp, err
	}))
	csi.RegisterIdentityServer(srv, p)
	csi.RegisterControllerServer(srv, p)
	csi.RegisterNodeServer(srv, p)
	fmt.Fprintf(os.Stderr, "%s serving on %s, volumes under %s\n", pluginName, u.Path, *root)
	log.Fatal(srv.Serve(lis))
}
