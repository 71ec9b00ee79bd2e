package plugin

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/llmgw/llmgw/plugin/proto/base"
	_ "github.com/llmgw/llmgw/plugin/proto/drivers"
	_ "github.com/llmgw/llmgw/plugin/proto/hclspec"
	_ "github.com/llmgw/llmgw/plugin/proto/structs"
)

// messages lists every field of every message of Nomad's plugin protocol
// (base.proto, driver.proto, the shared structs and hclspec), as
// name=number, transcribed from Nomad's own .proto files (docs/PROTOCOLS.md
// names the version). The test fails on a missing, extra or renumbered
// field.
var messages = map[string]string{
	"base.proto.PluginInfoRequest":    "",
	"base.proto.PluginInfoResponse":   "type=1 plugin_api_versions=2 plugin_version=3 name=4",
	"base.proto.ConfigSchemaRequest":  "",
	"base.proto.ConfigSchemaResponse": "spec=1",
	"base.proto.SetConfigRequest":     "msgpack_config=1 nomad_config=2 plugin_api_version=3",
	"base.proto.SetConfigResponse":    "",
	"base.proto.NomadConfig":          "driver=1",
	"base.proto.NomadDriverConfig":    "ClientMaxPort=1 ClientMinPort=2 Topology=3",
	"base.proto.ClientTopology":       "node_ids=1 distances=2 cores=3 override_total_compute=4 override_withold_compute=5",
	"base.proto.ClientTopologySLIT":   "dimension=1 values=2",
	"base.proto.ClientTopologyCore":   "socket_id=1 node_id=2 core_id=3 core_grade=4 disable=5 base_speed=6 max_speed=7 guess_speed=8",

	"drivers.proto.InitRequest":                           "",
	"drivers.proto.InitResponse":                          "",
	"drivers.proto.TaskConfigSchemaRequest":               "",
	"drivers.proto.TaskConfigSchemaResponse":              "spec=1",
	"drivers.proto.CapabilitiesRequest":                   "",
	"drivers.proto.CapabilitiesResponse":                  "capabilities=1",
	"drivers.proto.FingerprintRequest":                    "",
	"drivers.proto.FingerprintResponse":                   "attributes=1 health=2 health_description=3 err=4",
	"drivers.proto.RecoverTaskRequest":                    "task_id=1 handle=2",
	"drivers.proto.RecoverTaskResponse":                   "",
	"drivers.proto.StartTaskRequest":                      "task=1",
	"drivers.proto.StartTaskResponse":                     "result=1 driver_error_msg=2 handle=3 network_override=4",
	"drivers.proto.WaitTaskRequest":                       "task_id=1",
	"drivers.proto.WaitTaskResponse":                      "result=1 err=2",
	"drivers.proto.StopTaskRequest":                       "task_id=1 timeout=2 signal=3",
	"drivers.proto.StopTaskResponse":                      "",
	"drivers.proto.DestroyTaskRequest":                    "task_id=1 force=2",
	"drivers.proto.DestroyTaskResponse":                   "",
	"drivers.proto.InspectTaskRequest":                    "task_id=1",
	"drivers.proto.InspectTaskResponse":                   "task=1 driver=2 network_override=3",
	"drivers.proto.TaskStatsRequest":                      "task_id=1 collection_interval=2",
	"drivers.proto.TaskStatsResponse":                     "stats=1",
	"drivers.proto.TaskEventsRequest":                     "",
	"drivers.proto.SignalTaskRequest":                     "task_id=1 signal=2",
	"drivers.proto.SignalTaskResponse":                    "",
	"drivers.proto.ExecTaskRequest":                       "task_id=1 command=2 timeout=3",
	"drivers.proto.ExecTaskResponse":                      "stdout=1 stderr=2 result=3",
	"drivers.proto.ExecTaskStreamingIOOperation":          "data=1 close=2",
	"drivers.proto.ExecTaskStreamingRequest":              "setup=1 tty_size=2 stdin=3",
	"drivers.proto.ExecTaskStreamingRequest.Setup":        "task_id=1 command=2 tty=3",
	"drivers.proto.ExecTaskStreamingRequest.TerminalSize": "height=1 width=2",
	"drivers.proto.ExecTaskStreamingResponse":             "stdout=1 stderr=2 exited=3 result=4",
	"drivers.proto.CreateNetworkRequest":                  "alloc_id=1 hostname=2",
	"drivers.proto.CreateNetworkResponse":                 "isolation_spec=1 created=2",
	"drivers.proto.DestroyNetworkRequest":                 "alloc_id=1 isolation_spec=2",
	"drivers.proto.DestroyNetworkResponse":                "",
	"drivers.proto.ShutdownRequest":                       "",
	"drivers.proto.ShutdownResponse":                      "",
	"drivers.proto.DriverCapabilities":                    "send_signals=1 exec=2 fs_isolation=3 network_isolation_modes=4 must_create_network=5 mount_configs=6 disable_log_collection=8 dynamic_workload_users=9",
	"drivers.proto.NetworkIsolationSpec":                  "mode=1 path=2 labels=3 hostsConfig=4",
	"drivers.proto.HostsConfig":                           "hostname=1 address=2",
	"drivers.proto.DNSConfig":                             "servers=1 searches=2 options=3",
	"drivers.proto.NetworkOverride":                       "port_map=1 addr=2 auto_advertise=3",
	"drivers.proto.TaskConfig":                            "id=1 name=2 msgpack_driver_config=3 env=4 device_env=5 resources=6 mounts=7 devices=8 user=9 alloc_dir=10 stdout_path=11 stderr_path=12 task_group_name=13 job_name=14 alloc_id=15 network_isolation_spec=16 dns=17 job_id=18 namespace=19 node_name=20 node_id=21 parent_job_id=22",
	"drivers.proto.Resources":                             "allocated_resources=1 linux_resources=2 ports=3",
	"drivers.proto.AllocatedTaskResources":                "cpu=1 memory=2 networks=5",
	"drivers.proto.AllocatedCpuResources":                 "cpu_shares=1",
	"drivers.proto.AllocatedMemoryResources":              "memory_mb=2 memory_max_mb=3",
	"drivers.proto.NetworkResource":                       "device=1 cidr=2 ip=3 mbits=4 reserved_ports=5 dynamic_ports=6",
	"drivers.proto.NetworkPort":                           "label=1 value=2",
	"drivers.proto.PortMapping":                           "label=1 value=2 to=3 host_ip=4",
	"drivers.proto.LinuxResources":                        "cpu_period=1 cpu_quota=2 cpu_shares=3 memory_limit_bytes=4 oom_score_adj=5 cpuset_cpus=6 PercentTicks=8 cpuset_cgroup=9",
	"drivers.proto.Mount":                                 "task_path=1 host_path=2 readonly=3 propagation_mode=4 selinux_label=5 request_name=6",
	"drivers.proto.Device":                                "task_path=1 host_path=2 cgroup_permissions=3",
	"drivers.proto.TaskHandle":                            "version=1 config=2 state=3 driver_state=4",
	"drivers.proto.ExitResult":                            "exit_code=1 signal=2 oom_killed=3",
	"drivers.proto.TaskStatus":                            "id=1 name=2 state=3 started_at=4 completed_at=5 result=6",
	"drivers.proto.TaskDriverStatus":                      "attributes=1",
	"drivers.proto.TaskStats":                             "id=1 timestamp=2 agg_resource_usage=3 resource_usage_by_pid=4",
	"drivers.proto.TaskResourceUsage":                     "cpu=1 memory=2",
	"drivers.proto.CPUUsage":                              "system_mode=1 user_mode=2 total_ticks=3 throttled_periods=4 throttled_time=5 percent=6 measured_fields=7",
	"drivers.proto.MemoryUsage":                           "rss=1 cache=2 max_usage=3 kernel_usage=4 kernel_max_usage=5 measured_fields=6 usage=7 swap=8",
	"drivers.proto.DriverTaskEvent":                       "task_id=1 alloc_id=2 task_name=3 timestamp=4 message=5 annotations=6",

	"shared.structs.Attribute":        "float_val=1 int_val=2 string_val=3 bool_val=4 unit=5",
	"shared.structs.RecoverableError": "recoverable=1",

	"shared.hclspec.Spec":       "object=1 array=2 Attr=3 block_value=4 block_attrs=5 block_list=6 block_set=7 block_map=8 default=9 literal=10",
	"shared.hclspec.Attr":       "name=1 type=2 required=3",
	"shared.hclspec.Block":      "name=1 required=2 nested=3",
	"shared.hclspec.BlockAttrs": "name=1 type=2 required=3",
	"shared.hclspec.BlockList":  "name=1 min_items=2 max_items=3 nested=4",
	"shared.hclspec.BlockSet":   "name=1 min_items=2 max_items=3 nested=4",
	"shared.hclspec.BlockMap":   "name=1 labels=2 nested=3",
	"shared.hclspec.Literal":    "value=1",
	"shared.hclspec.Default":    "primary=1 default=2",
	"shared.hclspec.Object":     "attributes=1",
	"shared.hclspec.Array":      "values=1",
}

// enums, transcribed the same way, as NAME=number.
var enums = map[string]string{
	"base.proto.PluginType":                                   "UNKNOWN=0 DRIVER=2 DEVICE=3",
	"base.proto.CoreGrade":                                    "Performance=0 Efficiency=1",
	"drivers.proto.TaskState":                                 "UNKNOWN=0 RUNNING=1 EXITED=2",
	"drivers.proto.FingerprintResponse.HealthState":           "UNDETECTED=0 UNHEALTHY=1 HEALTHY=2",
	"drivers.proto.StartTaskResponse.Result":                  "SUCCESS=0 RETRY=1 FATAL=2",
	"drivers.proto.DriverCapabilities.FSIsolation":            "NONE=0 CHROOT=1 IMAGE=2 UNVEIL=3",
	"drivers.proto.DriverCapabilities.MountConfigs":           "UNKNOWN_MOUNTS=0 ANY_MOUNTS=0 NO_MOUNTS=1",
	"drivers.proto.NetworkIsolationSpec.NetworkIsolationMode": "HOST=0 GROUP=1 TASK=2 NONE=3",
	"drivers.proto.CPUUsage.Fields":                           "SYSTEM_MODE=0 USER_MODE=1 TOTAL_TICKS=2 THROTTLED_PERIODS=3 THROTTLED_TIME=4 PERCENT=5",
	"drivers.proto.MemoryUsage.Fields":                        "RSS=0 CACHE=1 MAX_USAGE=2 KERNEL_USAGE=3 KERNEL_MAX_USAGE=4 USAGE=5 SWAP=6",
}

// services lists each RPC as Name:kind, kind u (unary), s (server stream)
// or b (bidirectional stream), as in section 2.
var services = map[string]string{
	"base.proto.BasePlugin": "PluginInfo:u ConfigSchema:u SetConfig:u",
	"drivers.proto.Driver": "Init:u TaskConfigSchema:u Capabilities:u Fingerprint:s RecoverTask:u StartTask:u " +
		"WaitTask:u StopTask:u DestroyTask:u InspectTask:u TaskStats:s TaskEvents:s Shutdown:u SignalTask:u " +
		"ExecTask:u ExecTaskStreaming:b CreateNetwork:u DestroyNetwork:u",
}

const nomadPrefix = "hashicorp.nomad.plugins."

func pairs(t *testing.T, s string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("bad table entry %q", f)
		}
		m[k] = n
	}
	return m
}

func TestMessageFieldNumbers(t *testing.T) {
	for name, fields := range messages {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(nomadPrefix + name))
		if err != nil {
			t.Errorf("message %s: %v", name, err)
			continue
		}
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			t.Errorf("%s is not a message", name)
			continue
		}
		want := pairs(t, fields)
		got := map[string]int{}
		for i := 0; i < md.Fields().Len(); i++ {
			f := md.Fields().Get(i)
			got[string(f.Name())] = int(f.Number())
		}
		for k, n := range want {
			if g, ok := got[k]; !ok {
				t.Errorf("%s: field %s missing", name, k)
			} else if g != n {
				t.Errorf("%s.%s: got number %d; want %d", name, k, g, n)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: field %s is not in Nomad's protocol", name, k)
			}
		}
	}
}

func TestEnumValues(t *testing.T) {
	for name, values := range enums {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(nomadPrefix + name))
		if err != nil {
			t.Errorf("enum %s: %v", name, err)
			continue
		}
		ed := d.(protoreflect.EnumDescriptor)
		want := pairs(t, values)
		if ed.Values().Len() != len(want) {
			t.Errorf("%s: got %d values; want %d", name, ed.Values().Len(), len(want))
		}
		for k, n := range want {
			v := ed.Values().ByName(protoreflect.Name(k))
			if v == nil {
				t.Errorf("%s: value %s missing", name, k)
			} else if int(v.Number()) != n {
				t.Errorf("%s.%s: got %d; want %d", name, k, v.Number(), n)
			}
		}
	}
}

func TestServices(t *testing.T) {
	for name, rpcs := range services {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(nomadPrefix + name))
		if err != nil {
			t.Errorf("service %s: %v", name, err)
			continue
		}
		sd := d.(protoreflect.ServiceDescriptor)
		want := strings.Fields(rpcs)
		if sd.Methods().Len() != len(want) {
			t.Errorf("%s: got %d methods; want %d", name, sd.Methods().Len(), len(want))
		}
		for _, r := range want {
			m, kind, _ := strings.Cut(r, ":")
			md := sd.Methods().ByName(protoreflect.Name(m))
			if md == nil {
				t.Errorf("%s: method %s missing", name, m)
				continue
			}
			got := "u"
			switch {
			case md.IsStreamingClient() && md.IsStreamingServer():
				got = "b"
			case md.IsStreamingServer():
				got = "s"
			case md.IsStreamingClient():
				got = "c"
			}
			if got != kind {
				t.Errorf("%s.%s: got kind %s; want %s", name, m, got, kind)
			}
		}
	}
}
