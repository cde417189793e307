// Package v20170312 stands in for the Tencent Cloud VPC SDK that flannel's tencent-vpc backend imports (see go.mod):
// every call fails, so that backend reports an error if anyone selects it.
package v20170312

import "errors"

var errStub = errors.New("tencent-vpc backend: the Tencent Cloud SDK is not in this build (test stand-in)")

type Client struct{}

func NewClientWithSecretId(secretID, secretKey, region string) (*Client, error) { return &Client{}, errStub }

type Filter struct {
	Name   *string
	Values []*string
}

type Route struct {
	DestinationCidrBlock *string
	GatewayType          *string
	GatewayId            *string
	RouteId              *uint64
	RouteType            *string
	Enabled              *bool
}

type RouteTable struct {
	RouteTableId *string
	RouteSet     []*Route
}

type DescribeRouteTablesRequest struct{ Filters []*Filter }

type DescribeRouteTablesResponse struct {
	Response *struct{ RouteTableSet []*RouteTable }
}

type DeleteRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}

type CreateRoutesRequest struct {
	RouteTableId *string
	Routes       []*Route
}

func NewDescribeRouteTablesRequest() *DescribeRouteTablesRequest { return &DescribeRouteTablesRequest{} }
func NewDeleteRoutesRequest() *DeleteRoutesRequest               { return &DeleteRoutesRequest{} }
func NewCreateRoutesRequest() *CreateRoutesRequest               { return &CreateRoutesRequest{} }

func (c *Client) DescribeRouteTables(*DescribeRouteTablesRequest) (*DescribeRouteTablesResponse, error) {
	return nil, errStub
}
func (c *Client) DeleteRoutes(*DeleteRoutesRequest) (struct{}, error) { return struct{}{}, errStub }
func (c *Client) CreateRoutes(*CreateRoutesRequest) (struct{}, error) { return struct{}{}, errStub }
