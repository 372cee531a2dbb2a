#!/usr/bin/env node
import * as cdk from 'aws-cdk-lib';
import { OrdersStack } from '../lib/orders-stack';

const app = new cdk.App();
new OrdersStack(app, 'OrdersStack');
